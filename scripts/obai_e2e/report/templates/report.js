// Unit cards for report.html, built from the embedded JSON block.
// Every value is untrusted: nodes are made with createElement and filled with
// textContent only; no HTML is ever parsed from data. The only links built from data are
// trace pages, and only with an http(s) URL.
(function () {
  "use strict";
  var source = document.getElementById("report-data");
  var data = JSON.parse(source.textContent);
  var units = data.units;
  var labels = data.verdict_labels;
  var pageSize = data.page_size;
  var VERDICTS = ["pass", "fail", "needs_review", "inconclusive", "not_judged"];
  var RANK = {fail: 0, inconclusive: 1, needs_review: 2, not_judged: 3, pass: 4};

  var cards = document.getElementById("cards");
  var shown = document.getElementById("shown");
  var pageInfo = document.getElementById("page-info");
  var prev = document.getElementById("prev");
  var next = document.getElementById("next");
  var featureSel = document.getElementById("f-feature");
  var search = document.getElementById("f-search");
  var sortSel = document.getElementById("f-sort");
  var boxes = Array.prototype.slice.call(document.querySelectorAll("input[name=verdict]"));

  var state = {page: 0};
  var haystacks = new Array(units.length);
  var runOrder = units.map(function (_, i) { return i; });
  var problemOrder = runOrder.slice().sort(function (a, b) {
    var d = rank(units[a].verdict) - rank(units[b].verdict);
    return d !== 0 ? d : a - b;
  });

  function rank(v) { return Object.prototype.hasOwnProperty.call(RANK, v) ? RANK[v] : 5; }
  function verdictClass(v) { return VERDICTS.indexOf(v) >= 0 ? "v-" + v : "v-unknown"; }
  function verdictLabel(v) { return Object.prototype.hasOwnProperty.call(labels, v) ? labels[v] : String(v); }

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

  function traceLinks(dl, u) {
    var links = (u.trace_links || []).filter(function (p) { return /^https?:\/\//.test(p[1]); });
    if (!links.length) return;
    dl.appendChild(el("dt", null, links.length > 1 ? "trace pages" : "trace page"));
    var dd = el("dd");
    links.forEach(function (p, i) {
      if (i) dd.appendChild(document.createTextNode(" → "));
      var a = el("a", "trace-link", p[0]);
      a.setAttribute("href", p[1]);
      a.target = "_blank";
      a.rel = "noopener noreferrer";
      dd.appendChild(a);
    });
    dl.appendChild(dd);
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
      body.appendChild(el("div", "sect", "Final answer"));
      body.appendChild(el("pre", "answer", u.answer));
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
    var list = el("ul");
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
      list.appendChild(li);
    });
    box.appendChild(list);
    return box;
  }

  function card(u) {
    var art = el("article", "unit " + verdictClass(u.verdict));
    art.setAttribute("data-unit", u.id);
    art.setAttribute("data-verdict", u.verdict);
    art.setAttribute("data-feature", u.feature);

    var head = el("header");
    head.appendChild(el("span", "uid", u.id));
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

    if (u.verdict !== "pass") {
      var ejo = el("dl", "kv ejo");
      kv(ejo, "expected", u.expected);
      kv(ejo, "observed", u.observed);
      kv(ejo, "judgment", u.judgment);
      art.appendChild(ejo);
    }

    var facts = el("dl", "kv facts");
    kv(facts, u.async ? "traces (initial → follow-up)" : "trace", u.traces);
    traceLinks(facts, u);
    kv(facts, u.async ? "latency (initial ms + wait s + follow-up ms)" : "latency (ms)", u.latency);
    kv(facts, "exit code", u.exit_code === null || u.exit_code === undefined ? "—" : String(u.exit_code) +
       (u.timed_out ? " (timed out)" : ""));
    if (u.tokens !== null && u.tokens !== undefined) kv(facts, "tokens", String(u.tokens));
    if (u.cost !== null && u.cost !== undefined) kv(facts, "cost", Number(u.cost).toFixed(4));
    kv(facts, "judged by", u.judged_by);
    if (u.labels.length) kv(facts, "labels", u.labels.map(function (p) { return p[0] + "=" + p[1]; }).join(", "));
    if (u.known_needs_review) kv(facts, "known needs_review", u.known_needs_review.join(", "));
    if (u.override) kv(facts, "override", u.override);
    art.appendChild(facts);

    if (u.outcomes) art.appendChild(outcomesBlock(u));

    if (u.panel) {
      art.appendChild(el("div", "sect", "Judge panel"));
      var panel = el("dl", "kv panel");
      u.panel.forEach(function (p) { kv(panel, p[0], p[1]); });
      art.appendChild(panel);
    }

    var det = el("details", "trace");
    var summary = el("summary", null, u.async ? "Curated traces and answer" : "Curated trace and answer");
    det.appendChild(summary);
    var body = el("div", "trace-body");
    det.appendChild(body);
    det.addEventListener("toggle", function () {
      if (det.open && !body.hasChildNodes()) traceBody(u, body);
    });
    art.appendChild(det);
    return art;
  }

  function selected() {
    var verdicts = {};
    boxes.forEach(function (b) { if (b.checked) verdicts[b.value] = true; });
    var feature = featureSel.value;
    var q = search.value.trim().toLowerCase();
    var order = sortSel.value === "run" ? runOrder : problemOrder;
    return order.filter(function (i) {
      var u = units[i];
      if (!verdicts[u.verdict]) return false;
      if (feature && u.feature !== feature) return false;
      if (q && haystack(i).indexOf(q) < 0) return false;
      return true;
    });
  }

  function render() {
    var hits = selected();
    var pages = Math.max(1, Math.ceil(hits.length / pageSize));
    if (state.page >= pages) state.page = pages - 1;
    var start = state.page * pageSize;
    var slice = hits.slice(start, start + pageSize);
    while (cards.firstChild) cards.removeChild(cards.firstChild);
    var frag = document.createDocumentFragment();
    slice.forEach(function (i) { frag.appendChild(card(units[i])); });
    if (!slice.length) frag.appendChild(el("p", "empty", "No unit matches the filters."));
    cards.appendChild(frag);
    shown.textContent = hits.length
      ? "Showing " + (start + 1) + "–" + (start + slice.length) + " of " + hits.length + " matching units (" +
        units.length + " in the run)"
      : "0 of " + units.length + " units match";
    pageInfo.textContent = "page " + (state.page + 1) + " of " + pages;
    prev.disabled = state.page === 0;
    next.disabled = state.page >= pages - 1;
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
  prev.addEventListener("click", function () { if (state.page > 0) { state.page -= 1; render(); window.scrollTo(0, cards.offsetTop - 80); } });
  next.addEventListener("click", function () { state.page += 1; render(); window.scrollTo(0, cards.offsetTop - 80); });
  Array.prototype.forEach.call(document.querySelectorAll("button.stat"), function (btn) {
    btn.addEventListener("click", function () {
      var only = btn.getAttribute("data-verdict");
      boxes.forEach(function (b) { b.checked = !only || b.value === only; });
      refilter();
    });
  });
  render();
})();
