// Render the book's status words as coloured badges.
//  - a table cell whose whole text is holds / fails / undecided / partly;
//  - in a verdict box (.admonition.verdict) and in "Verdict" paragraphs, a paragraph or list item
//    that opens with "Holds:", "Fails:", "Undecided:" or "Partly:".
(function () {
  const WORDS = ["holds", "fails", "undecided", "partly"];
  function badge(word) {
    const s = document.createElement("span");
    s.className = "status-badge status-" + word.toLowerCase();
    s.textContent = word.toLowerCase();
    return s;
  }
  function cells() {
    document.querySelectorAll("table td").forEach(function (td) {
      const t = td.textContent.trim().toLowerCase();
      if (WORDS.includes(t) && !td.querySelector(".status-badge")) {
        td.textContent = "";
        td.appendChild(badge(t));
      }
    });
  }
  function firstText(el) {
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT, {
      acceptNode: function (n) { return n.nodeValue.trim() ? NodeFilter.FILTER_ACCEPT : NodeFilter.FILTER_SKIP; }
    });
    return w.nextNode();
  }
  const OPEN = /^(\s*)(Holds|Fails|Undecided|Partly):\s*/;
  function openers(root) {
    root.querySelectorAll("p, li").forEach(function (el) {
      if (el.querySelector(".status-badge")) return;
      const node = firstText(el);
      if (!node) return;
      const m = node.nodeValue.match(OPEN);
      if (!m) return;
      node.nodeValue = node.nodeValue.slice(m[0].length);
      node.parentNode.insertBefore(badge(m[2]), node);
      node.parentNode.insertBefore(document.createTextNode(" "), node);
    });
  }
  function run() {
    if (document.querySelector("table.dashboard")) document.body.classList.add("dashboard-page");
    cells();
    document.querySelectorAll(".admonition.verdict").forEach(openers);
    // "**Verdict (scale).** Holds: ..." in the chapters' prose
    document.querySelectorAll("article strong").forEach(function (strong) {
      if (!/^Verdict\b/.test(strong.textContent.trim())) return;
      let n = strong.nextSibling;
      while (n && n.nodeType === Node.TEXT_NODE && !n.nodeValue.trim()) n = n.nextSibling;
      if (!n || (n.previousSibling && n.previousSibling.className === "status-badge")) return;
      const t = n.nodeType === Node.TEXT_NODE ? n : firstText(n);
      if (!t) return;
      const m = t.nodeValue.match(OPEN);
      if (!m) return;
      t.nodeValue = " " + t.nodeValue.slice(m[0].length);
      t.parentNode.insertBefore(badge(m[2]), t);
    });
  }
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", run);
  else run();
})();
