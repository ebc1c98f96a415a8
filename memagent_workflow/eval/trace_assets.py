"""The trace page's style and script (``trace_page.py`` inlines them: the page
needs no network). The script renders one sample at a time from the JSON the
page carries, so a page of many samples with many turns stays light."""

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{padding:12px 18px;background:#f4f4f7;border-bottom:1px solid #ddd}
h1{font-size:18px;margin:0 0 6px}
table{border-collapse:collapse;margin:8px 0}
td,th{border:1px solid #ccc;padding:3px 7px;text-align:right}
th{background:#eee}
td:first-child,th:first-child{text-align:left}
#main{display:flex;height:calc(100vh - 40px)}
#side{width:300px;overflow:auto;border-right:1px solid #ddd;padding:8px}
#side button{display:block;width:100%;text-align:left;margin:2px 0;
  font:12px monospace;background:#fff;border:1px solid #ccc;cursor:pointer}
#side button.sel{background:#dde8ff}
#view{flex:1;overflow:auto;padding:8px 16px}
.turn{border-left:4px solid #ccc;margin:6px 0;padding:2px 8px}
.turn.ev{border-color:#e0a000;background:#fff8e6}
.turn.holds .mem{outline:1px solid #5a5}
.mem{font-family:monospace;white-space:pre-wrap;margin:2px 0}
.meta{color:#666;font-size:12px}
mark{background:#ffe066}
ins{background:#c8f7c5;text-decoration:none}
del{background:#f7c5c5}
.right{color:#070}.wrong{color:#b00}
.note{color:#a60}
.unscored{color:#666}
.excerpt{font-family:monospace;white-space:pre-wrap;font-size:12px;color:#555;
  background:#fffdf4;border:1px dashed #e0c060;margin:2px 0;padding:2px 4px}
.excerpt mark{background:#ffd27a}
"""

JS = r"""
(function(){
"use strict";
const DATA = JSON.parse(document.getElementById("trace-data").textContent);
const side = document.getElementById("list");
const view = document.getElementById("view");
const filter = document.getElementById("filter");
const esc = s => String(s).replace(/[&<>"]/g,
  c => ({"&":"&amp;","<":"&lt;",">":"&gt;",'"':"&quot;"}[c]));
function norm(w){return w.toLowerCase().replace(/[^\p{L}\p{N}]/gu,"");}
// Words of text, gold-answer words marked, words new since prev marked <ins>.
function render(text, prev, terms){
  const words = String(text).split(/(\s+)/);
  const before = new Set(String(prev || "").split(/\s+/).map(norm));
  const gold = terms.map(t => t.split(/\s+/).map(norm).filter(Boolean));
  const flat = words.map(norm);
  const hit = new Array(words.length).fill(false);
  gold.forEach(g => {
    for (let i = 0; i < words.length; i++) {
      let j = i, k = 0;
      while (j < words.length && k < g.length) {
        if (!flat[j]) { j++; continue; }
        if (flat[j] !== g[k]) break;
        j++; k++;
      }
      if (g.length && k === g.length) for (let x = i; x < j; x++) hit[x] = true;
    }
  });
  let out = "";
  words.forEach((w, i) => {
    let h = esc(w);
    if (hit[i]) h = "<mark>" + h + "</mark>";
    if (prev !== null && flat[i] && !before.has(flat[i])) h = "<ins>" + h + "</ins>";
    out += h;
  });
  const now = new Set(flat);
  const gone = [...before].filter(w => w && !now.has(w));
  if (prev !== null && gone.length)
    out += " <del>" + esc(gone.slice(0, 30).join(" ")) + "</del>";
  return out;
}
const LOCATED = {evidence: "the set's evidence",
  answer: "located by answer words: every chunk holding the gold answer's " +
    "words, which other sentences may share; judge from the excerpts"};
function excerpt(e){
  return "<div class='excerpt'>" + esc(e.before) + "<mark>" + esc(e.match) +
    "</mark>" + esc(e.after) + "</div>";
}
function show(i){
  const s = DATA.samples[i];
  const scored = s.answered !== null && s.answered !== undefined;
  const excerpts = {};
  (s.evidence_excerpts || []).forEach(e => { excerpts[e.chunk] = e; });
  side.querySelectorAll("button").forEach(b =>
    b.classList.toggle("sel", Number(b.dataset.i) === i));
  let html = "<h2>" + esc(s.id) + " (" + esc(s.target) + ")</h2>";
  html += "<p><b>question:</b> " + esc(s.question) + "<br><b>gold:</b> " +
    (s.terms.length ? "<mark>" + esc(s.terms.join(" | ")) + "</mark>" :
      "<span class='unscored'>none given (unscored)</span>") +
    "<br><b>evidence in chunks:</b> " +
    esc(s.evidence_chunks.join(", ") || "not found") + " (<span id='located'>" +
    esc(LOCATED[s.evidence_source] || s.evidence_source) + "</span>)<br>" +
    (scored ? "<b>caught:</b> " + (s.caught ? "turn " + s.caught_turn : "never") +
      ", <b>kept:</b> " + s.kept +
      (s.lost_turn !== null && s.lost_turn !== undefined ?
        ", lost at turn " + s.lost_turn : "") +
      ", <b>kind:</b> " + esc(s.kind || "answered right") +
      (s.counted === false ? " (empty output: left out of the split, as " +
        "sub-EM leaves it out)" : "") :
      "<span class='unscored'>unscored: no gold answer to look for</span>") +
    "</p>";
  html += "<div class='turn'><div class='meta'>initial memory</div><div class='mem'>" +
    render(s.initial_memory, null, s.terms) + "</div></div>";
  let prev = s.initial_memory;
  s.turns.forEach(t => {
    const text = t.memory === null ? prev : t.memory;
    const cls = "turn" + (t.evidence ? " ev" : "") + (t.holds ? " holds" : "");
    html += "<div class='" + cls + "' id='turn-" + t.chunk + "'><div class='meta'>turn " +
      t.chunk + ": chunk " + t.chunk + ", tokens " + t.start + "-" + t.end +
      (t.evidence ? " <b>evidence here</b>" +
        (s.evidence_source === "answer" ? " (by answer words)" : "") : "") +
      "; memory " + t.memory_tokens +
      " tokens" + (t.memory === null ? " (unchanged)" : "") +
      (t.wiped ? " (wiped before the next turn)" : "") + "</div>" +
      (t.evidence && excerpts[t.chunk] ? excerpt(excerpts[t.chunk]) : "") +
      "<div class='mem'>" + render(text, t.memory === null ? text : prev, s.terms) +
      "</div></div>";
    prev = t.wiped ? s.initial_memory : text;
  });
  html += "<div class='turn'><div class='meta'>final turn: memory read</div>" +
    "<div class='mem'>" + render(s.final_memory, null, s.terms) + "</div>" +
    "<p><b>answer:</b> " + esc(s.prediction === null ? "(failed: " + s.error + ")" :
    s.prediction) + " &rarr; <b>" + esc(s.extracted) + "</b> <span class='" +
    (!scored ? "unscored'>unscored" : s.answered ? "right'>right" : "wrong'>wrong") +
    "</span></p></div>";
  view.innerHTML = html;
}
function list(){
  const f = filter.value;
  side.innerHTML = "";
  DATA.samples.forEach((s, i) => {
    if (f === "wrong" && s.answered !== false) return;
    if (f !== "all" && f !== "wrong" && s.kind !== f) return;
    const b = document.createElement("button");
    b.dataset.i = i;
    const mark = s.answered === null || s.answered === undefined ? "\u2013 " :
      s.answered ? "\u2713 " : "\u2717 ";
    b.textContent = mark + s.target + " " + s.id +
      (s.kind ? " [" + s.kind + "]" : mark === "\u2013 " ? " [unscored]" : "");
    b.onclick = () => show(i);
    side.appendChild(b);
  });
  const first = side.querySelector("button");
  if (first) show(Number(first.dataset.i)); else view.textContent = "no sample";
}
filter.onchange = list;
window.showSample = show;
list();
})();
"""
