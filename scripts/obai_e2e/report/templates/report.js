// The units of report.html, built from the embedded JSON block: a compact table (one row per
// unit, its card on demand) or cards; the repeats of a case grouped under one row with their
// pass rate; an anchor per unit (#unit-<id>) that opens it wherever it is. A large run embeds
// the units that need a look in full and every other unit as a short array (a row): its card
// links its trace pages and says where the rest of it is.
// Every value is untrusted: nodes are made with createElement and filled with textContent
// only; no HTML is ever parsed from data. Links built from data go to the run's own trace
// pages (traces/<file>.html) or, for a trace backend's page, to an http(s) URL.
(function () {
  "use strict";
  var source = document.getElementById("report-data");
  var data = JSON.parse(source.textContent);
  var labelSets = data.label_sets || [];
  var units = data.units.map(function (u) { return Array.isArray(u) ? fromRow(u) : u; });
  var labels = data.verdict_labels;
  var pageSize = data.page_size;
  var VERDICTS = ["pass", "fail", "needs_review", "inconclusive", "not_judged"];
  var RANK = {fail: 0, inconclusive: 1, needs_review: 2, not_judged: 3, pass: 4};
  var PAGE_PATH = /^traces\/[A-Za-z0-9._:-]+\.html$/;

  // [id, verdict, feature, codes, query, latency, trace pages (1 the turn's, 2 the follow-up's), async, labels]
  function fromRow(r) {
    var id = String(r[0]);
    var group = id.replace(/\.r[1-9][0-9]{0,2}$/, "");
    var pages = [];
    if (r[6] & 1) pages.push(["trace", "traces/" + id + ".html"]);
    if (r[6] & 2) pages.push(["follow-up", "traces/" + id + ".followup.html"]);
    return {id: id, "case": group.replace(/\.ui$/, ""), group: group, verdict: String(r[1]), feature: String(r[2]),
            reasons: r[3], query: String(r[4]), latency: String(r[5]), async: r[7] === 1,
            labels: labelSets[r[8]] || [], trace_pages: pages, trace_links: [], traces: "—", row: true};
  }

  var list = document.getElementById("units");
  var shown = document.getElementById("shown");
  var pageInfo = document.getElementById("page-info");
  var prev = document.getElementById("prev");
  var next = document.getElementById("next");
  var featureSel = document.getElementById("f-feature");
  var search = document.getElementById("f-search");
  var sortSel = document.getElementById("f-sort");
  var boxes = Array.prototype.slice.call(document.querySelectorAll("input[name=verdict]"));
  var viewButtons = Array.prototype.slice.call(document.querySelectorAll("button[data-view]"));

  var state = {page: 0, view: "table", openGroups: {}, openUnits: {}, marked: null, scroll: false};
  var haystacks = new Array(units.length);
  var byId = {};
  units.forEach(function (u, i) { byId[u.id] = i; });

  // Groups: the units of one case on one channel (its repeats), in run order.
  var groups = [];
  var groupOf = {};
  units.forEach(function (u, i) {
    var key = u.group || u.id;
    if (!Object.prototype.hasOwnProperty.call(groupOf, key)) {
      groupOf[key] = groups.length;
      groups.push({key: key, members: []});
    }
    groups[groupOf[key]].members.push(i);
  });

  function rank(v) { return Object.prototype.hasOwnProperty.call(RANK, v) ? RANK[v] : 5; }
  function verdictClass(v) { return VERDICTS.indexOf(v) >= 0 ? "v-" + v : "v-unknown"; }
  function verdictLabel(v) { return Object.prototype.hasOwnProperty.call(labels, v) ? labels[v] : String(v); }
  function worst(members) {
    return members.reduce(function (best, i) { return Math.min(best, rank(units[i].verdict)); }, 9);
  }

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }

  function kv(dl, key, value) {
    if (value === undefined || value === null || value === "") return;
    dl.appendChild(el("dt", null, key));
    dl.appendChild(el("dd", null, value));
  }

  function anchor(u, text) {
    var a = el("a", "uid", text === undefined ? u.id : text);
    a.setAttribute("href", "#unit-" + encodeURIComponent(u.id));
    a.title = "link to this unit";
    return a;
  }

  // The run's own trace pages first (they live with the run); a trace backend's page second.
  function traceLinks(u, compact) {
    var box = el("span", "trace-links");
    (u.trace_pages || []).forEach(function (p, i) {
      if (!PAGE_PATH.test(p[1])) return;
      if (i) box.appendChild(document.createTextNode(" → "));
      var a = el("a", "trace-link", compact ? (i ? "follow-up" : "trace") : p[0]);
      a.setAttribute("href", p[1]);
      a.title = "the trace of " + (i ? "the follow-up turn" : "the turn") + ": span tree, timing, inputs and outputs";
      box.appendChild(a);
    });
    if (!compact) {
      (u.trace_links || []).forEach(function (p) {
        if (!/^https?:\/\//.test(p[1])) return;
        box.appendChild(document.createTextNode(box.childNodes.length ? " · " : ""));
        var a = el("a", "trace-link ext", "in the trace backend: " + p[0]);
        a.setAttribute("href", p[1]);
        a.target = "_blank";
        a.rel = "noopener noreferrer";
        box.appendChild(a);
      });
    }
    return box;
  }

  function haystack(i) {
    if (haystacks[i] === undefined) {
      var u = units[i];
      var parts = [u.id, u.case, u.feature, u.verdict, u.query, u.judgment || "", u.expected || "", u.observed || ""];
      parts = parts.concat(u.reasons);
      u.labels.forEach(function (pair) { parts.push(pair[0] + "=" + pair[1]); });
      haystacks[i] = parts.join("\n").toLowerCase();
    }
    return haystacks[i];
  }

  function traceBody(u, body) {
    if (u.answer) {
      body.appendChild(el("div", "sect", u.async ? "First answer" : "Final answer"));
      body.appendChild(el("pre", "answer", u.answer));
    }
    if (u.followup_answer) {
      body.appendChild(el("div", "sect", "Follow-up answer (the job's result)"));
      body.appendChild(el("pre", "answer followup", u.followup_answer));
    }
    if (u.trace) {
      body.appendChild(el("div", "sect", u.async ? "Curated trace (initial turn)" : "Curated trace"));
      body.appendChild(el("pre", "curated", u.trace));
    }
    if (u.followup_trace) {
      body.appendChild(el("div", "sect", "Curated trace (follow-up)"));
      body.appendChild(el("pre", "curated followup", u.followup_trace));
    }
    if (!u.trace && !u.followup_trace) {
      body.appendChild(el("p", "empty", "No curated trace was stored for this unit."));
    }
  }

  function outcomesBlock(u) {
    var box = el("div", "outcomes");
    box.appendChild(el("div", "sect", "Rule outcomes that tripped"));
    var ul = el("ul");
    u.outcomes.forEach(function (o) {
      var li = el("li");
      li.appendChild(el("code", null, o.code || o.rule));
      li.appendChild(document.createTextNode(" " + o.status + (o.detail ? ": " + o.detail : "")));
      if (o.evidence.length) {
        var evs = el("ul");
        o.evidence.forEach(function (e) {
          var item = el("li", "ev");
          item.appendChild(document.createTextNode((e.span ? "span " + e.span : (e.source || "evidence")) + ": "));
          item.appendChild(el("q", null, e.excerpt));
          evs.appendChild(item);
        });
        li.appendChild(evs);
      }
      ul.appendChild(li);
    });
    box.appendChild(ul);
    return box;
  }

  function card(u, withId) {
    var art = el("article", "unit " + verdictClass(u.verdict));
    if (withId) art.id = "unit-" + u.id;
    art.setAttribute("data-unit", u.id);
    art.setAttribute("data-verdict", u.verdict);
    art.setAttribute("data-feature", u.feature);

    var head = el("header");
    head.appendChild(anchor(u));
    head.appendChild(el("span", "badge verdict " + verdictClass(u.verdict), verdictLabel(u.verdict)));
    head.appendChild(el("span", "feat", u.feature));
    if (u.smoke) head.appendChild(el("span", "tag", "smoke"));
    if (u.async) head.appendChild(el("span", "tag", "async"));
    if (u.reasons.length) {
      var codes = el("span", "codes");
      u.reasons.forEach(function (r) { codes.appendChild(el("code", "code", r)); });
      head.appendChild(codes);
    }
    art.appendChild(head);

    if (u.description) art.appendChild(el("p", "desc", u.description));
    art.appendChild(el("div", "query", u.query));

    if (!u.row && (u.verdict !== "pass" || u.not_asked)) {
      var ejo = el("dl", "kv ejo");
      kv(ejo, "expected", u.expected);
      kv(ejo, "observed", u.observed);
      kv(ejo, "judgment", u.judgment);
      art.appendChild(ejo);
    }

    var facts = el("dl", "kv facts");
    var traceLabel = u.async ? "traces (initial → follow-up)" : "trace";
    if ((u.trace_pages || []).length || (u.trace_links || []).length) {
      facts.appendChild(el("dt", null, traceLabel));
      var dd = el("dd");
      dd.appendChild(traceLinks(u, false));
      facts.appendChild(dd);
    } else {
      kv(facts, traceLabel, u.traces);
    }
    kv(facts, u.async ? "latency (initial ms + wait s + follow-up ms)" : "latency (ms)", u.latency);
    if (!u.row) {
      kv(facts, "exit code", u.exit_code === null || u.exit_code === undefined ? "—" : String(u.exit_code) +
         (u.timed_out ? " (timed out)" : ""));
    }
    if (u.tokens !== null && u.tokens !== undefined) kv(facts, "tokens", String(u.tokens));
    if (u.cost !== null && u.cost !== undefined) kv(facts, "cost", Number(u.cost).toFixed(4));
    kv(facts, "judged by", u.judged_by);
    if (u.not_asked) kv(facts, "not asked (no judge)", u.not_asked.join(", "));
    if (u.labels.length) kv(facts, "labels", u.labels.map(function (p) { return p[0] + "=" + p[1]; }).join(", "));
    if (u.known_needs_review) kv(facts, "known needs_review", u.known_needs_review.join(", "));
    if (u.override) kv(facts, "override", u.override);
    if (u.dropped) kv(facts, "soft codes dropped", u.dropped);
    art.appendChild(facts);

    if (u.outcomes) art.appendChild(outcomesBlock(u));

    if (u.panel) {
      art.appendChild(el("div", "sect", "Judge panel"));
      var panel = el("dl", "kv panel");
      u.panel.forEach(function (p) { kv(panel, p[0], p[1]); });
      art.appendChild(panel);
    }

    if (u.row) {
      art.appendChild(el("p", "row-note", "This page holds in full only the units that need a look; this unit's " +
        "answer, curated trace and rule outcomes are in results.json (results.units.jsonl, line " +
        (byId[u.id] + 1) + ") and its trace on its trace page."));
      return art;
    }
    var det = el("details", "trace");
    det.appendChild(el("summary", null, u.async ? "Answers and curated traces" : "Answer and curated trace"));
    var body = el("div", "trace-body");
    det.appendChild(body);
    det.addEventListener("toggle", function () {
      if (det.open && !body.hasChildNodes()) traceBody(u, body);
    });
    art.appendChild(det);
    return art;
  }

  function passRate(members) {
    var judged = members.filter(function (i) { return ["inconclusive", "not_judged"].indexOf(units[i].verdict) < 0; });
    var passed = judged.filter(function (i) { return units[i].verdict === "pass"; }).length;
    if (!judged.length) return "no judged repeat";
    return passed + " of " + judged.length + " pass (" + Math.round(100 * passed / judged.length) + " %)";
  }

  function groupVerdict(members) {
    var w = worst(members);
    return VERDICTS.filter(function (v) { return rank(v) === w; })[0] || "not_judged";
  }

  // --- the table view ------------------------------------------------------------------

  function queryCell(text) {
    var td = el("td", "c-query");
    var clamp = el("div", "clamp", text);
    clamp.title = text;
    td.appendChild(clamp);
    return td;
  }

  function unitRow(u, member) {
    var tr = el("tr", "urow " + verdictClass(u.verdict) + (member ? " member" : ""));
    tr.id = "unit-" + u.id;
    tr.setAttribute("data-unit", u.id);
    var id = el("td", "c-id");
    id.appendChild(anchor(u));
    tr.appendChild(id);
    var v = el("td", "c-verdict");
    v.appendChild(el("span", "badge verdict " + verdictClass(u.verdict), verdictLabel(u.verdict)));
    tr.appendChild(v);
    tr.appendChild(el("td", "c-feat", u.feature));
    var codes = el("td", "c-codes");
    u.reasons.forEach(function (r) { codes.appendChild(el("code", "code", r)); });
    tr.appendChild(codes);
    tr.appendChild(queryCell(u.query));
    tr.appendChild(el("td", "c-lat", u.latency));
    var t = el("td", "c-trace");
    t.appendChild(traceLinks(u, true));
    tr.appendChild(t);
    tr.addEventListener("click", function (ev) {
      if (ev.target.closest && ev.target.closest("a")) return;
      state.openUnits[u.id] = !state.openUnits[u.id];
      render();
    });
    return tr;
  }

  function detailRow(u) {
    var tr = el("tr", "detail");
    var td = el("td");
    td.colSpan = 7;
    td.appendChild(card(u, false));
    tr.appendChild(td);
    return tr;
  }

  function groupRow(g, hits) {
    var first = units[g.members[0]];
    var open = !!state.openGroups[g.key];
    var verdict = groupVerdict(g.members);
    var tr = el("tr", "grow " + verdictClass(verdict));
    tr.setAttribute("data-group", g.key);
    var id = el("td", "c-id");
    var toggle = el("button", "expander", (open ? "▾ " : "▸ ") + first.case + " ×" + g.members.length);
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", open ? "true" : "false");
    id.appendChild(toggle);
    tr.appendChild(id);
    var v = el("td", "c-verdict");
    v.appendChild(el("span", "badge verdict " + verdictClass(verdict), passRate(g.members)));
    tr.appendChild(v);
    tr.appendChild(el("td", "c-feat", first.feature));
    var codes = el("td", "c-codes");
    var seen = {};
    g.members.forEach(function (i) {
      units[i].reasons.forEach(function (r) {
        if (!seen[r]) { seen[r] = true; codes.appendChild(el("code", "code", r)); }
      });
    });
    tr.appendChild(codes);
    tr.appendChild(queryCell(first.query));
    tr.appendChild(el("td", "c-lat", hits.length < g.members.length ? hits.length + " match" : ""));
    tr.appendChild(el("td", "c-trace"));
    tr.addEventListener("click", function (ev) {
      if (ev.target.closest && ev.target.closest("a")) return;
      state.openGroups[g.key] = !open;
      render();
    });
    return tr;
  }

  function tableView(items) {
    var table = el("table", "units-table");
    var head = el("thead");
    var hr = el("tr");
    ["unit", "verdict", "feature", "codes", "query", "latency", "trace"].forEach(function (h, i) {
      hr.appendChild(el("th", ["c-id", "c-verdict", "c-feat", "c-codes", "c-query", "c-lat", "c-trace"][i], h));
    });
    head.appendChild(hr);
    table.appendChild(head);
    var body = el("tbody");
    items.forEach(function (item) {
      var g = item.group;
      var single = g.members.length === 1;
      if (!single) body.appendChild(groupRow(g, item.hits));
      if (single || state.openGroups[g.key]) {
        g.members.forEach(function (i) {
          var u = units[i];
          body.appendChild(unitRow(u, !single));
          if (state.openUnits[u.id]) body.appendChild(detailRow(u));
        });
      }
    });
    table.appendChild(body);
    return table;
  }

  // --- the cards view ------------------------------------------------------------------

  function cardsView(items) {
    var frag = document.createDocumentFragment();
    items.forEach(function (item) {
      var g = item.group;
      if (g.members.length === 1) {
        frag.appendChild(card(units[g.members[0]], true));
        return;
      }
      var first = units[g.members[0]];
      var det = el("details", "group " + verdictClass(groupVerdict(g.members)));
      det.setAttribute("data-group", g.key);
      if (state.openGroups[g.key]) det.open = true;
      var sum = el("summary");
      sum.appendChild(el("strong", null, first.case));
      sum.appendChild(document.createTextNode(" · " + g.members.length + " repeats · " + passRate(g.members)));
      det.appendChild(sum);
      // The repeats' cards are made when the group is first opened.
      function fill() {
        if (det.open && det.childNodes.length === 1) g.members.forEach(function (i) { det.appendChild(card(units[i], true)); });
      }
      det.addEventListener("toggle", function () { state.openGroups[g.key] = det.open; fill(); });
      fill();
      frag.appendChild(det);
    });
    return frag;
  }

  // --- filters, order, pages -----------------------------------------------------------

  function matches(i, verdicts, feature, q) {
    var u = units[i];
    if (!verdicts[u.verdict]) return false;
    if (feature && u.feature !== feature) return false;
    if (q && haystack(i).indexOf(q) < 0) return false;
    return true;
  }

  function checkedVerdicts() {
    var verdicts = {};
    boxes.forEach(function (b) { if (b.checked) verdicts[b.value] = true; });
    return verdicts;
  }

  function selected() {
    var verdicts = checkedVerdicts();
    var feature = featureSel.value;
    var q = search.value.trim().toLowerCase();
    var items = [];
    groups.forEach(function (g, gi) {
      var hits = g.members.filter(function (i) { return matches(i, verdicts, feature, q); });
      if (hits.length) items.push({group: g, hits: hits, order: gi, rank: worst(hits)});
    });
    if (sortSel.value !== "run") {
      items.sort(function (a, b) { return a.rank - b.rank || a.order - b.order; });
    }
    return items;
  }

  function render() {
    var items = selected();
    var pages = Math.max(1, Math.ceil(items.length / pageSize));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * pageSize;
    var slice = items.slice(start, start + pageSize);
    while (list.firstChild) list.removeChild(list.firstChild);
    list.className = "view-" + state.view;
    if (!slice.length) {
      list.appendChild(el("p", "empty", "No unit matches the filters."));
    } else if (state.view === "cards") {
      list.appendChild(cardsView(slice));
    } else {
      var wrap = el("div", "table-wrap");
      wrap.appendChild(tableView(slice));
      list.appendChild(wrap);
    }
    var count = items.reduce(function (n, it) { return n + it.hits.length; }, 0);
    // A row is a case: the repeats of a stochastic case share one, so rows and units may differ.
    var grouped = count > items.length ? ", the repeats of a case grouped in one row" : "";
    shown.textContent = items.length
      ? "Showing " + (start + 1) + "–" + (start + slice.length) + " of " + items.length + " rows: " + count +
        " of the run's " + units.length + " units match" + grouped
      : "0 of " + units.length + " units match";
    pageInfo.textContent = "page " + (state.page + 1) + " of " + pages;
    prev.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
    viewButtons.forEach(function (b) { b.setAttribute("aria-pressed", b.getAttribute("data-view") === state.view); });
    var node = state.marked === null ? null : document.getElementById("unit-" + state.marked);
    if (node) {
      node.classList.add("target");
      if (state.scroll) node.scrollIntoView({block: "start"});
    }
    state.scroll = false;
  }

  // Open the unit a link names (#unit-<id>): clear filters that hide it, go to its page, open
  // its group and its card.
  function openTarget() {
    var hash = window.location.hash;
    if (hash.indexOf("#unit-") !== 0) return;
    var id;
    try { id = decodeURIComponent(hash.slice(6)); } catch (e) { return; }
    if (!Object.prototype.hasOwnProperty.call(byId, id)) return;
    if (timer) clearTimeout(timer);  // a search still being typed would hide it again
    var i = byId[id];
    if (!matches(i, checkedVerdicts(), featureSel.value, search.value.trim().toLowerCase())) {
      boxes.forEach(function (b) { b.checked = true; });
      featureSel.value = "";
      search.value = "";
    }
    var g = groups[groupOf[units[i].group || units[i].id]];
    if (g.members.length > 1) state.openGroups[g.key] = true;
    if (state.view === "table") state.openUnits[id] = true;
    var items = selected();
    var at = 0;
    items.forEach(function (it, k) { if (it.group === g) at = k; });
    state.page = Math.floor(at / pageSize);
    state.marked = id;
    state.scroll = true;
    render();
  }

  function refilter() { state.page = 0; render(); }

  var timer = null;
  search.addEventListener("input", function () {
    if (timer) clearTimeout(timer);
    timer = setTimeout(refilter, 120);
  });
  featureSel.addEventListener("change", refilter);
  sortSel.addEventListener("change", refilter);
  boxes.forEach(function (b) { b.addEventListener("change", refilter); });
  viewButtons.forEach(function (b) {
    b.addEventListener("click", function () { state.view = b.getAttribute("data-view"); render(); });
  });
  prev.addEventListener("click", function () { if (state.page > 0) { state.page -= 1; render(); window.scrollTo(0, list.offsetTop - 80); } });
  next.addEventListener("click", function () { state.page += 1; render(); window.scrollTo(0, list.offsetTop - 80); });
  Array.prototype.forEach.call(document.querySelectorAll("button.stat"), function (btn) {
    btn.addEventListener("click", function () {
      var only = btn.getAttribute("data-verdict");
      boxes.forEach(function (b) { b.checked = !only || b.value === only; });
      refilter();
    });
  });
  window.addEventListener("hashchange", openTarget);
  render();
  openTarget();
})();
