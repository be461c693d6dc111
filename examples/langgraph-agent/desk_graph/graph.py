"""The LangGraph graph of one turn: screen → playbooks → agent ⇄ tools → finish (or screen → refuse).

Every node, the playbook loads, the model and each tool call become spans of one Opik trace
when the graph runs with an ``OpikTracer`` among its callbacks.
"""
from __future__ import annotations

from typing import Annotated, TypedDict

from langchain_core.messages import HumanMessage
from langchain_core.runnables import RunnableConfig, RunnableLambda
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from .model import DeskModel
from .planner import plan, playbooks
from .screen import REFUSAL, screen
from .tools import TOOLS

PLAYBOOK_TOOLS = {"market-data": ["quote_lookup"], "filings": ["company_financials"], "derivatives": ["option_payoff"]}


class State(TypedDict, total=False):
    messages: Annotated[list, add_messages]
    question: str
    screen: dict
    playbooks: list[str]
    answer: str


def _load(request: dict) -> dict:
    return {"loaded": request["playbook"], "tools": PLAYBOOK_TOOLS[request["playbook"]]}


load_playbook = RunnableLambda(_load, name="load_playbook")


def build(faults: frozenset[str] = frozenset()):
    """The compiled graph; ``faults`` change what it does (faults.py)."""
    model = DeskModel(stray_figure="stray_figure" in faults).bind_tools(TOOLS)

    def screen_node(state: State) -> dict:
        return {"screen": screen(state["question"], strict="strict_screen" in faults)}

    def refuse_node(state: State) -> dict:
        return {"answer": REFUSAL}

    def playbooks_node(state: State, config: RunnableConfig) -> dict:
        names = playbooks(plan(state["question"]))
        if "skip_playbook" in faults:
            names = names[1:]
        for name in names:
            load_playbook.invoke({"playbook": name}, config)
        return {"playbooks": names}

    def agent_node(state: State) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    def finish_node(state: State) -> dict:
        return {"answer": str(state["messages"][-1].content)}

    g = StateGraph(State)
    g.add_node("screen", screen_node)
    g.add_node("refuse", refuse_node)
    g.add_node("playbooks", playbooks_node)
    g.add_node("agent", agent_node)
    g.add_node("tools", ToolNode(TOOLS))
    g.add_node("finish", finish_node)
    g.add_edge(START, "screen")
    g.add_conditional_edges("screen", lambda s: "playbooks" if s["screen"]["verdict"] == "pass" else "refuse")
    g.add_edge("refuse", END)
    g.add_edge("playbooks", "agent")
    g.add_conditional_edges("agent", lambda s: "tools" if s["messages"][-1].tool_calls else "finish")
    g.add_edge("tools", "agent")
    g.add_edge("finish", END)
    return g.compile()


def first_state(question: str) -> State:
    return {"messages": [HumanMessage(content=question)], "question": question}
