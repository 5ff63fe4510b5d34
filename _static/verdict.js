// Render the book's status words as coloured badges (styles in verdict.css):
//  - a table cell whose whole text is holds / fails / undecided / partly, alone or followed by the
//    seed audit's agreement (the landing page's dashboards glue the plain word, <claim>_status);
//  - a glued verdict, "Holds: sentence" (<claim>_verdict), wherever a page shows it: the status
//    word becomes a badge in front of the sentence.
(function () {
  const WORDS = ["holds", "fails", "undecided", "partly"];
  const OPEN = /^(\s*)(Holds|Fails|Undecided|Partly):\s*/;
  function badge(word) {
    const s = document.createElement("span");
    s.className = "status-badge status-" + word.toLowerCase();
    s.textContent = word.toLowerCase();
    return s;
  }
  function cells() {
    document.querySelectorAll("table td").forEach(function (td) {
      const t = td.textContent.trim().toLowerCase();
      // the word alone, or followed by the seed audit's agreement: "holds (seeds: 5/5)"
      const m = t.match(/^(holds|fails|undecided|partly)(\s*\(seeds:[^)]*\))?$/);
      if (m && !td.querySelector(".status-badge")) {
        td.textContent = "";
        td.appendChild(badge(m[1]));
        if (m[2]) td.appendChild(document.createTextNode(" " + m[2].trim()));
      }
    });
  }
  function verdicts() {
    document.querySelectorAll(".pasted-text").forEach(function (el) {
      if (el.querySelector(".status-badge")) return;
      const node = el.firstChild;
      if (!node || node.nodeType !== Node.TEXT_NODE) return;
      const m = node.nodeValue.match(OPEN);
      if (!m) return;
      node.nodeValue = " " + node.nodeValue.slice(m[0].length);
      el.insertBefore(badge(m[2]), node);
    });
  }
  // the execution table's status emoji (myst-nb writes U+2705 / U+274C) render as boxes
  // without an emoji font: write them as words, in the badges' colours
  function execStatus() {
    const WORD = {"\u2705": ["ok", "holds"], "\u274C": ["failed", "fails"]};
    document.querySelectorAll("table td").forEach(function (td) {
      const w = WORD[td.textContent.trim()];
      if (!w) return;
      td.textContent = "";
      const s = badge(w[1]);
      s.textContent = w[0];
      td.appendChild(s);
    });
  }
  function run() {
    if (document.querySelector("table.dashboard")) document.body.classList.add("dashboard-page");
    cells();
    verdicts();
    execStatus();
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
