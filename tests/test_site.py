"""The published site as a reader meets it: every built page opened in headless Chromium.

Run after ``jupyter-book build .`` (``.ci/run`` does: tests, build, then this file). For every HTML
page under ``_build/html`` (or ``$STUMPBOOK_SITE_DIR``), served on 127.0.0.1, it asserts:

- math is rendered: every Sphinx math element holds MathJax output and no raw ``$...$``, ``\\(``
  or ``\\[`` is left in the text;
- every image loads (``naturalWidth > 0``);
- no cell shows an error, a traceback or a warning;
- every internal link resolves (the target page exists, and so does its ``#anchor``);
- no script error, and the page does not overflow horizontally;

and saves a full-page screenshot to ``_build/screenshots/<page>.png``.

The machines have no network, so the MathJax CDN request is answered from a local copy of the same
package (``npm install mathjax@3``, looked for in ``$STUMPBOOK_MATHJAX_DIR`` or
``~/.cache/stumpbook-mathjax``); the published pages keep their CDN URL. Every other external request
is aborted. Skips with a reason when Chromium, Playwright, MathJax or the built site is absent.
"""
from __future__ import annotations

import functools
import html.parser
import http.server
import os
import re
import shutil
import subprocess
import threading
import urllib.parse
from pathlib import Path

import pytest

from conftest import ROOT

SITE = Path(os.environ.get("STUMPBOOK_SITE_DIR", ROOT / "_build" / "html")).resolve()
SHOTS = SITE.parent / "screenshots"
MATHJAX_CACHE = Path(os.environ.get("STUMPBOOK_MATHJAX_DIR",
                                    Path.home() / ".cache" / "stumpbook-mathjax"))
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
VIEWPORT = {"width": 1280, "height": 900}
#: the book's own pages (skip Sphinx's generated index / search pages only for the text checks)
PAGES = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html")
               if "_static" not in p.parts and "_sources" not in p.parts) if SITE.is_dir() else []
GENERATED = {"genindex.html", "search.html", "py-modindex.html"}


def _chromium() -> str | None:
    for cand in (os.environ.get("CHROMIUM"), "/usr/bin/chromium", shutil.which("chromium"),
                 shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if cand and Path(cand).exists():
            return cand
    return None


def _mathjax_dir() -> Path | None:
    """The ``es5`` folder of a local MathJax 3, installing it from the npm registry if needed."""
    es5 = MATHJAX_CACHE / "node_modules" / "mathjax" / "es5"
    if (es5 / "tex-mml-chtml.js").exists():
        return es5
    npm = shutil.which("npm")
    if npm is None:
        return None
    MATHJAX_CACHE.mkdir(parents=True, exist_ok=True)
    try:
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--silent", "--prefix",
                        str(MATHJAX_CACHE), "mathjax@3"], check=True, timeout=300,
                       capture_output=True)
    except (subprocess.SubprocessError, OSError):
        return None
    return es5 if (es5 / "tex-mml-chtml.js").exists() else None


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # noqa: D401 - silence the access log
        pass


@pytest.fixture(scope="module")
def server():
    if not (SITE / "index.html").exists():
        pytest.skip(f"no built site at {SITE} (run `jupyter-book build .` first)")
    handler = functools.partial(_QuietHandler, directory=str(SITE))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip("playwright.sync_api", reason="pip package playwright not installed")
    exe = _chromium()
    if exe is None:
        pytest.skip("Chromium not found (apt-get install chromium; or set $CHROMIUM)")
    if not (SITE / "index.html").exists():
        pytest.skip(f"no built site at {SITE} (run `jupyter-book build .` first)")
    mj = _mathjax_dir()
    if mj is None:
        pytest.skip("no local MathJax 3 (npm install --prefix ~/.cache/stumpbook-mathjax mathjax@3)")
    with sync_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=exe, args=CHROMIUM_ARGS, headless=True)
        ctx = b.new_context(viewport=VIEWPORT, device_scale_factor=1)
        mj_re = re.compile(r"^https://cdn\.jsdelivr\.net/npm/mathjax@3/es5/(?P<path>[^?#]+)")

        def route(r):
            url = r.request.url
            if url.startswith("http://127.0.0.1"):
                return r.continue_()
            m = mj_re.match(url)
            if m:
                f = (mj / m["path"]).resolve()
                if mj in f.parents and f.is_file():
                    return r.fulfill(path=str(f))
            return r.abort()  # no network: every other external request fails fast

        ctx.route("**/*", route)
        yield ctx
        ctx.close()
        b.close()


class _Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        for k, v in attrs:
            if k in ("id", "name") and v:
                self.ids.add(v)


@functools.lru_cache(maxsize=None)
def _anchors(rel: str) -> frozenset[str] | None:
    f = SITE / rel
    if not f.is_file():
        return None
    if f.suffix != ".html":
        return frozenset()
    p = _Ids()
    p.feed(f.read_text(errors="replace"))
    return frozenset(p.ids)


_JS_WAIT_MATH = r"""
async () => {
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    await MathJax.startup.promise;
    if (MathJax.typesetPromise) { await MathJax.typesetPromise(); }
  }
  return true;
}
"""

# Run after the screenshot: it hides code and rendered math to read the remaining visible text.
_JS_PAGE_FACTS = r"""
async () => {
  const main = document.querySelector('main') || document.body;
  const maths = Array.from(document.querySelectorAll('.math'));
  const imgs = Array.from(document.querySelectorAll('img'));
  const outs = Array.from(document.querySelectorAll('.cell_output, .output'));
  const errorOut = outs.filter(o => o.matches('.traceback, .error, .output.traceback, .output.error')
                                      || o.querySelector('.traceback, .ansi-red-intense-fg'));
  const text = outs.map(o => o.innerText).join('\n');
  const links = Array.from(document.querySelectorAll('a[href]')).map(a => a.href);
  const wide = Array.from(main.querySelectorAll('table, img, pre, .cell_output'))
      .filter(e => e.getBoundingClientRect().right > main.getBoundingClientRect().right + 4)
      .map(e => e.tagName + (e.className ? '.' + String(e.className).split(' ')[0] : ''));
  const visibleText = (() => {
    const hidden = Array.from(main.querySelectorAll('pre, code, .highlight, mjx-container, .MathJax'));
    const old = hidden.map(e => e.style.display);
    hidden.forEach(e => { e.style.display = 'none'; });
    const t = main.innerText;
    hidden.forEach((e, i) => { e.style.display = old[i]; });
    return t;
  })();
  return {
    text: visibleText,
    nMath: maths.length,
    nMathRendered: maths.filter(m => m.querySelector('mjx-container') || m.tagName === 'MJX-CONTAINER').length,
    nMjx: document.querySelectorAll('mjx-container').length,
    mathJaxLoaded: !!(window.MathJax && MathJax.version),
    mathErrors: Array.from(document.querySelectorAll('mjx-merror, [data-mjx-error]')).map(e => e.getAttribute('data-mjx-error') || e.textContent).slice(0, 5),
    brokenImgs: imgs.filter(i => !(i.complete && i.naturalWidth > 0)).map(i => i.getAttribute('src')),
    nImgs: imgs.length,
    errorOutputs: errorOut.map(o => o.innerText.slice(0, 300)),
    outputText: text,
    links: links,
    scrollWidth: document.documentElement.scrollWidth,
    clientWidth: document.documentElement.clientWidth,
    wide: wide,
    uncaptioned: Array.from(main.querySelectorAll('article img, .bd-article img'))
        .filter(i => !(i.closest('figure') && i.closest('figure').querySelector('figcaption')
                       && i.closest('figure').querySelector('figcaption').innerText.trim().length > 20))
        .map(i => i.getAttribute('src')),
    figuresWithoutImage: Array.from(main.querySelectorAll('article figure, .bd-article figure'))
        .filter(fg => !fg.querySelector('img'))
        .map(fg => fg.id || (fg.querySelector('figcaption') || fg).innerText.slice(0, 60)),
    codeBeforeFirstFigure: (() => {
      const fig = document.querySelector('article figure, .bd-article figure');
      if (!fig) return 0;
      const top = fig.getBoundingClientRect().top;
      return Array.from(document.querySelectorAll('.cell_input, div.highlight'))
        .filter(e => e.offsetParent !== null && !e.parentElement.closest('.cell_input'))
        // a collapsed hide-input toggle keeps its box but renders no text: not visible code
        .filter(e => e.innerText.trim().length > 0)
        .filter(e => e.getBoundingClientRect().top < top)
        .reduce((a, e) => a + e.getBoundingClientRect().height, 0);
    })(),
    claimsTable: (() => {
      const h = Array.from(document.querySelectorAll('h2')).find(e => e.textContent.trim().startsWith('Claims and verdicts'));
      const t = h && h.closest('section') && h.closest('section').querySelector('table');
      return t ? Array.from(t.querySelectorAll('tr')).map(tr => Array.from(tr.children).map(td => td.innerText.trim())) : [];
    })(),
  };
}
"""

RAW_MATH = [
    (re.compile(r"\\\(|\\\)|\\\[|\\\]"), "raw \\( \\) \\[ \\] delimiters"),
    (re.compile(r"\$\$"), "raw $$"),
    (re.compile(r"\w\^\{[^}]*\}"), "a raw TeX superscript (e.g. math in a title shown as link text)"),
    (re.compile(r"\$[^$\n]{0,200}?[\\^_{}][^$\n]{0,200}?\$"), "raw $...$ with TeX inside"),
    (re.compile(r"\\(frac|beta|tau|alpha|omega|mathbb|operatorname|tilde|wedge|sum|sqrt)\b"),
     "a raw TeX command"),
]
RAW_MARKUP = [
    (re.compile(r"(```|:::)\{[\w:-]+\}"), "an unparsed directive fence"),
    (re.compile(r"\{(glue|glue:text|glue:figure|cite|ref|numref|doc|prf:ref|eq)\}`"), "an unparsed role"),
    (re.compile(r"^:(label|name|class):", re.M), "a directive option shown as text"),
]
ERROR_TEXT = [
    (re.compile(r"Traceback \(most recent call last\)"), "a traceback"),
    (re.compile(r"^\s*\w+(Error|Exception): ", re.M), "an exception message"),
    (re.compile(r"\w+Warning: "), "a Python warning"),
]


def _page_id(rel: str) -> str:
    return rel[:-5].replace("/", "__")


@pytest.fixture(scope="module")
def facts(server, browser):
    """Open each page once: facts, console errors, screenshot."""
    SHOTS.mkdir(parents=True, exist_ok=True)
    cache: dict[str, dict] = {}

    def get(rel: str) -> dict:
        if rel in cache:
            return cache[rel]
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        # Known upstream duplicate in jupyter-book 1.0.4 + sphinx-thebe 0.3.1: the thebe config
        # script is emitted twice, so the second ``const THEBE_JS_URL`` throws. Harmless (thebe is
        # only used by launch buttons, which are off); every other script error fails.
        errors_ignored = ("Identifier 'THEBE_JS_URL' has already been declared",)
        page.goto(server + rel, wait_until="load", timeout=60_000)
        page.wait_for_load_state("networkidle", timeout=30_000)
        page.evaluate(_JS_WAIT_MATH)
        page.screenshot(path=str(SHOTS / f"{_page_id(rel)}.png"), full_page=True)
        f = page.evaluate(_JS_PAGE_FACTS)
        f["pageErrors"] = [e for e in errors if not any(k in e for k in errors_ignored)]
        page.close()
        cache[rel] = f
        return f

    return get


def _params():
    if not PAGES:
        return [pytest.param("index.html", id="no-site")]
    return [pytest.param(p, id=_page_id(p)) for p in PAGES]


def test_site_has_the_book_pages():
    if not PAGES:
        pytest.skip(f"no built site at {SITE}")
    for name in ("intro.html", "notation.html", "bibliography.html", "chapters/01_setup.html",
                 "chapters/02_population_dynamics.html", "chapters/03_finite_corpus.html",
                 "chapters/04_error_bound.html", "chapters/05_boundary_symmetrization.html",
                 "chapters/06_positional_semantic.html"):
        assert name in PAGES, f"{name} missing from the built site"


@pytest.mark.parametrize("rel", _params())
def test_math_is_rendered(rel, facts):
    f = facts(rel)
    if f["nMath"]:
        assert f["mathJaxLoaded"], f"{rel}: page has math but MathJax did not load"
        assert f["nMathRendered"] == f["nMath"], (
            f"{rel}: {f['nMath'] - f['nMathRendered']} of {f['nMath']} math elements not rendered")
    assert not f["mathErrors"], f"{rel}: MathJax errors: {f['mathErrors']}"
    bad = [(why, m.group(0)[:80]) for rx, why in RAW_MATH for m in [rx.search(f["text"])] if m]
    assert not bad, f"{rel}: unrendered math in the text: {bad}"


@pytest.mark.parametrize("rel", _params())
def test_no_raw_markup(rel, facts):
    """No MyST directive or role is left unparsed (e.g. a theorem fence whose title holds a
    backtick role: CommonMark forbids backticks in a backtick fence's info string)."""
    f = facts(rel)
    bad = [(why, f["text"][max(m.start() - 40, 0):m.end() + 40]) for rx, why in RAW_MARKUP
           for m in [rx.search(f["text"])] if m]
    assert not bad, f"{rel}: unrendered markup: {bad}"


@pytest.mark.parametrize("rel", _params())
def test_images_load(rel, facts):
    f = facts(rel)
    assert not f["brokenImgs"], f"{rel}: images that did not load: {f['brokenImgs']}"
    # a figure glued without its PNG (e.g. a non-inline matplotlib backend) shows '<Figure size ...>'
    assert not f["figuresWithoutImage"], f"{rel}: figures without an image: {f['figuresWithoutImage']}"


@pytest.mark.parametrize("rel", _params())
def test_figures_have_captions(rel, facts):
    """Every image in the text is a figure with a caption that says what to see."""
    f = facts(rel)
    assert not f["uncaptioned"], f"{rel}: images without a caption (use glue:figure): {f['uncaptioned']}"


#: visible code (pixels at 1280 px width) a reader may scroll past before the first figure
MAX_CODE_BEFORE_FIGURE_PX = 1200


@pytest.mark.parametrize("rel", _params())
def test_no_wall_of_code_before_first_figure(rel, facts):
    f = facts(rel)
    assert f["codeBeforeFirstFigure"] <= MAX_CODE_BEFORE_FIGURE_PX, (
        f"{rel}: {f['codeBeforeFirstFigure']:.0f} px of visible code before the first figure "
        f"(limit {MAX_CODE_BEFORE_FIGURE_PX}); move set-up code into stumplib or tag it hide-input")


@pytest.mark.parametrize("rel", _params())
def test_no_error_output(rel, facts):
    f = facts(rel)
    assert not f["errorOutputs"], f"{rel}: error outputs: {f['errorOutputs']}"
    bad = [(why, m.group(0)) for rx, why in ERROR_TEXT for m in [rx.search(f["outputText"])] if m]
    assert not bad, f"{rel}: cell output shows {bad}"
    assert not f["pageErrors"], f"{rel}: script errors: {f['pageErrors']}"


@pytest.mark.parametrize("rel", _params())
def test_internal_links_resolve(rel, facts, server):
    f = facts(rel)
    broken = []
    for href in f["links"]:
        if not href.startswith(server):
            continue
        u = urllib.parse.urlsplit(href[len(server) - 1:])
        path = urllib.parse.unquote(u.path).lstrip("/") or "index.html"
        if path.endswith("/"):
            path += "index.html"
        ids = _anchors(path)
        if ids is None:
            broken.append(href[len(server):])
        elif u.fragment and u.fragment not in ids and u.fragment != "":
            broken.append(href[len(server):] + " (no such anchor)")
    assert not broken, f"{rel}: broken internal links: {sorted(set(broken))}"


@pytest.mark.parametrize("rel", _params())
def test_no_horizontal_overflow(rel, facts):
    f = facts(rel)
    assert f["scrollWidth"] <= f["clientWidth"] + 2, (
        f"{rel}: the page scrolls sideways ({f['scrollWidth']} > {f['clientWidth']} px); wide: {f['wide']}")


def test_landing_page_claims_table_is_filled(facts):
    """Every row of the claims table shows a glued measurement (a number) and a verdict: a glue key
    a chapter does not publish leaves its cell empty (Sphinx only warns), and this fails."""
    if "intro.html" not in PAGES:
        pytest.skip("no intro.html in the built site")
    rows = facts("intro.html")["claimsTable"]
    assert rows, "no claims table under the 'Claims and verdicts' heading of the landing page"
    header, body = rows[0], rows[1:]
    assert [h.lower().split(" [")[0] for h in header] == ["claim", "measured", "value", "verdict"], header
    assert len(body) >= 10, f"claims table has only {len(body)} rows"
    for cells in body:
        claim, measured, value, verdict = cells
        assert re.search(r"\d", value), f"row without a glued value: {cells}"
        assert re.search(r"ch\. \d", measured), f"row without a chapter link: {cells}"
        assert len(verdict) >= 3, f"row without a verdict: {cells}"
