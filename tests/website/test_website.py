"""The built website, as a reader sees it, checked in a real headless browser.

What it needs: the book built first (README command 1 writes ``_build/html``), and Chromium
with its driver from the OS packages (``apt-get install chromium chromium-driver``). A missing
build or browser fails these tests with a message saying so; nothing is skipped.

How: ``_build/html`` is served by ``http.server`` on 127.0.0.1 (a free port, a background
thread; the search page needs http, not file://) and opened by Chromium through selenium, with
a fresh profile. Every page in ``_toc.yml`` is loaded once;
one script in the page waits for MathJax to typeset and for every image, then reports what it
sees. The checks, per page:

- no JavaScript error: no SEVERE entry in the browser's console log (a failed script, style,
  image or font load is one too);
- every ``<img>`` has loaded (``naturalWidth > 0``);
- math is typeset by the MathJax bundled in ``_static`` (``_config.yml``): every ``.math``
  element holds a rendered ``mjx-container``, MathJax reports no error, and the visible text
  outside code (``pre``/``code`` hidden) holds no raw LaTeX (``\\(``, ``\\[``, ``$$``,
  ``$x$``, or a ``\\command``);
- nothing is fetched from another host (the browser's resource timing), and no built page
  points a script, style sheet, image or frame at one (a scan of the HTML);

per chapter (a page built from ``notebooks/*.ipynb``):

- at least one figure (a loaded image in a cell's output);
- every widget shows its default figure: a cell output holding an ipywidgets view also holds
  a loaded image, and a chapter whose code makes widgets (it calls ipywidgets, or a library
  function that does: found with ``ast``, no names written here) has such a view on its page;

and the search page answers a query with links into the chapters.

Run it after the build, last: ``python -m pytest -q tests/website``.
"""
from __future__ import annotations

import ast
import functools
import html.parser
import json
import re
import shutil
import tempfile
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
HTML = ROOT / "_build" / "html"
BUILD_HINT = (
    f"the book is not built: {HTML / 'index.html'} does not exist. Build it first with the "
    "README's command 1: pip install -r requirements.txt -e . && "
    "jupyter-book build . -W -n --keep-going"
)
BROWSER_HINT = (
    "the website tests need Chromium and its driver from the OS packages: "
    "apt-get update && apt-get install -y chromium chromium-driver"
)
CHROMIUM_FLAGS = (
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    # a container's /dev/shm is often 64 MB, too small for Chromium's renderer
    "--disable-dev-shm-usage", "--window-size=1280,1024",
)
PAGE_TIMEOUT_S = 60
WIDTHS = (1280, 390)  # a laptop's window and a phone's
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _toc_pages() -> list[str]:
    """Every document of the book, in the order of _toc.yml (root first)."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    pages = [toc["root"]]

    def walk(node):
        if isinstance(node, dict):
            if "file" in node:
                pages.append(str(node["file"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk({k: v for k, v in toc.items() if k != "root"})
    return [re.sub(r"\.(md|ipynb)$", "", p) for p in pages]


PAGES = _toc_pages()
CHAPTERS = [p for p in PAGES if (ROOT / p).with_suffix(".ipynb").exists()]


@functools.lru_cache(maxsize=None)
def _widget_makers() -> frozenset[str]:
    """Names of the library's functions that make ipywidgets: those that import ipywidgets (or
    use a module-level alias of it), and those that call such a function, found with ast, so
    that moving or renaming a chapter's widget needs no change here."""
    funcs: dict[str, ast.AST] = {}
    makers: set[str] = set()
    for path in sorted((ROOT / "commlab").rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        aliases = {a.asname or a.name for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
                   for a in n.names
                   if (getattr(n, "module", None) or a.name).split(".")[0] == "ipywidgets"}
        # top-level functions and methods; a nested function belongs to the function around it
        methods = [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body]
        for f in tree.body + methods:
            if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
                funcs[f.name] = f
                for n in ast.walk(f):
                    imported = isinstance(n, (ast.Import, ast.ImportFrom)) and any(
                        (getattr(n, "module", None) or a.name).split(".")[0] == "ipywidgets" for a in n.names)
                    if imported or (isinstance(n, ast.Name) and n.id in aliases):
                        makers.add(f.name)
    while True:  # wrappers: a function that calls a maker makes widgets too
        callers = {name for name, f in funcs.items() if name not in makers and any(
            isinstance(c, ast.Call) and (getattr(c.func, "id", None) or getattr(c.func, "attr", None)) in makers
            for c in ast.walk(f))}
        if not callers:
            return frozenset(makers)
        makers |= callers


def _cells_making_widgets(chapter: str) -> list[str]:
    """The code cells of a chapter's notebook that make widgets: they call one of the library's
    widget makers, or ipywidgets itself. Returns each cell's last line."""
    names = [re.escape(n) for n in sorted(_widget_makers())] + ["interact", "interactive"]
    calls = re.compile(r"\b(?:%s)\s*\(|\bipywidgets\b" % "|".join(names))
    nb = json.loads((ROOT / chapter).with_suffix(".ipynb").read_text())
    sources = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    return [s.strip().splitlines()[-1] for s in sources if calls.search(s)]


# Raw LaTeX in the visible text: \( \) \[ \] delimiters, $$, a $...$ pair around something that
# is not a space, or any \command (prose outside code has no backslashes of its own).
RAW_LATEX = re.compile(r"\\[()\[\]]|\$\$|\$[^\s$](?:[^$\n]{0,200}[^\s$])?\$|\\[A-Za-z]+")

# Runs in the page once it has loaded; reports what a reader would see.
INSPECT_JS = r"""
const done = arguments[arguments.length - 1];
(async () => {
  const r = {origin: location.origin};
  // math: wait for MathJax's first typeset, then look for what it left untouched
  const maths = [...document.querySelectorAll('.math')].filter(e => !e.closest('pre, code'));
  r.math = maths.length;
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) {
    try { await MathJax.startup.promise; r.mathjax = 'typeset'; }
    catch (e) { r.mathjax = 'failed: ' + e; }
  } else {
    r.mathjax = window.MathJax ? 'configured but never loaded' : 'absent';
  }
  r.mathjax_src = [...document.scripts].map(s => s.src).filter(s => /mathjax/i.test(s));
  r.untypeset = maths.filter(e => !e.querySelector('mjx-container'))
                     .map(e => e.textContent.trim().slice(0, 100));
  r.math_errors = [...document.querySelectorAll('mjx-merror, [data-mjx-error]')]
                     .map(e => (e.getAttribute('data-mjx-error') || e.textContent).slice(0, 100));
  // images: load every one now (lazy ones too), then wait for each to finish or fail
  const imgs = [...document.images];
  imgs.forEach(i => { i.loading = 'eager'; });
  await Promise.all(imgs.map(i => i.complete ? null : new Promise(ok => {
    i.addEventListener('load', ok, {once: true});
    i.addEventListener('error', ok, {once: true});
    setTimeout(ok, 15000);
  })));
  const loaded = i => i.complete && i.naturalWidth > 0;
  r.images = imgs.map(i => ({src: (i.currentSrc || i.src).slice(0, 200), ok: loaded(i),
                             in_output: !!i.closest('.cell_output')}));
  // widgets: the cell output around each widget view, and the figures in it
  r.widgets = [...document.querySelectorAll('script[type="__VIEW__"]')].map(v => {
    const out = v.closest('.cell_output');
    return {in_output: !!out, figures: out ? [...out.querySelectorAll('img')].filter(loaded).length : 0};
  });
  // the visible text, code hidden
  const style = document.createElement('style');
  style.textContent = 'pre, code, kbd, samp { display: none !important; }';
  document.head.appendChild(style);
  r.text = document.body.innerText;
  style.remove();
  r.resources = performance.getEntriesByType('resource').map(e => e.name);
  return r;
})().then(done, e => done({failed: String(e && e.stack || e)}));
""".replace("__VIEW__", WIDGET_VIEW)


# Runs once the page is typeset and its images are in: the widths of what sits in the text's
# column (figures, tables, display equations, printed blocks outside code cells) against it.
LAYOUT_JS = r"""
const a = document.querySelector('article.bd-article') || document.querySelector('main') || document.body;
const cs = getComputedStyle(a);
const where = e => { const s = e.closest('section[id]'); return s ? '#' + s.id : ''; };
const text = e => e.innerText.trim().slice(0, 50).replace(/\s+/g, ' ');
return {
  column: a.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight),
  figures: [...a.querySelectorAll('.cell_output img')].map(i => ({
    src: i.getAttribute('src'), shown: i.getBoundingClientRect().width, natural: i.naturalWidth, at: where(i)})),
  tables: [...a.querySelectorAll('table')].filter(t => !t.closest('pre, .cell_input') && !t.parentElement.closest('table'))
    .map(t => ({width: Math.max(t.getBoundingClientRect().width, t.scrollWidth), what: text(t), at: where(t)})),
  equations: [...a.querySelectorAll('mjx-container[display="true"]')].map(c => ({
    width: (c.querySelector('mjx-math') || c).getBoundingClientRect().width,
    what: (c.closest('.math') || c).textContent.slice(0, 50), at: where(c)})),
  printed: [...a.querySelectorAll('pre')].filter(p => !p.closest('.cell_input'))
    .map(p => ({width: p.scrollWidth, what: text(p), at: where(p)})),
};
"""


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


class Site:
    """The served build and one browser; loads each page once and keeps its report."""

    def __init__(self):
        self.problem = None
        self.server = self.driver = self.profile = None
        self._reports: dict[str, dict] = {}
        if not (HTML / "index.html").is_file():
            self.problem = BUILD_HINT
            return
        chromium = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
        driver = shutil.which("chromedriver")
        if not chromium or not driver:
            missing = " and ".join(n for n, p in (("chromium", chromium), ("chromedriver", driver)) if not p)
            self.problem = f"{missing} not found on PATH; {BROWSER_HINT}"
            return
        try:
            from selenium import webdriver
            from selenium.webdriver.chrome.service import Service
        except ImportError as e:
            self.problem = f"selenium is not installed ({e}); pip install -r requirements.txt"
            return
        handler = functools.partial(_QuietHandler, directory=str(HTML))
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.profile = tempfile.mkdtemp(prefix="commlab-chromium-")
        options = webdriver.ChromeOptions()
        options.binary_location = chromium
        for flag in CHROMIUM_FLAGS:
            options.add_argument(flag)
        options.add_argument(f"--user-data-dir={self.profile}")
        options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            self.driver = webdriver.Chrome(service=Service(driver), options=options)
        except Exception as e:  # a driver that does not match the browser, a browser that dies
            self.problem = f"Chromium did not start through {driver}: {e}\n{BROWSER_HINT}"
            return
        self.driver.set_page_load_timeout(PAGE_TIMEOUT_S)
        self.driver.set_script_timeout(PAGE_TIMEOUT_S)

    def require(self):
        if self.problem:
            pytest.fail(self.problem, pytrace=False)

    def severe_log(self) -> list[str]:
        """The SEVERE console entries since the last call. None is ignored."""
        return [e["message"] for e in self.driver.get_log("browser") if e["level"] == "SEVERE"]

    def report(self, page: str, width: int = WIDTHS[0]) -> dict:
        """What a reader sees of ``page`` in a window ``width`` px wide (see INSPECT_JS and
        LAYOUT_JS)."""
        self.require()
        if (page, width) not in self._reports:
            html_file = HTML / f"{page}.html"
            if not html_file.is_file():
                pytest.fail(f"{page}.html was not built (it is in _toc.yml); {BUILD_HINT}", pytrace=False)
            self.severe_log()  # drop what an earlier page left behind
            if self.driver.execute_script("return window.innerWidth") != width:
                self.driver.set_window_size(width, 1024)
            self.driver.get(self.base + f"{page}.html")
            r = self.driver.execute_async_script(INSPECT_JS)
            if "failed" in r:
                pytest.fail(f"inspecting {page}.html failed in the browser: {r['failed']}", pytrace=False)
            r["severe"] = self.severe_log()
            r["layout"] = self.driver.execute_script(LAYOUT_JS)
            self._reports[page, width] = r
        return self._reports[page, width]

    def close(self):
        if self.driver:
            self.driver.quit()
        if self.server:
            self.server.shutdown()
            self.server.server_close()
        if self.profile:
            shutil.rmtree(self.profile, ignore_errors=True)


@pytest.fixture(scope="module")
def site():
    s = Site()
    yield s
    s.close()


def test_every_notebook_is_a_chapter_page():
    notebooks = sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks, "no notebooks/*.ipynb found"
    assert sorted(CHAPTERS) == notebooks, f"notebooks missing from _toc.yml: {sorted(set(notebooks) - set(CHAPTERS))}"


@pytest.mark.parametrize("page", PAGES)
def test_no_javascript_errors(site, page):
    severe = site.report(page)["severe"]
    assert severe == [], f"{page}.html: errors in the browser's console: {severe}"


@pytest.mark.parametrize("page", PAGES)
def test_every_image_loads(site, page):
    broken = [i["src"] for i in site.report(page)["images"] if not i["ok"]]
    assert broken == [], f"{page}.html: images that did not load: {broken}"


@pytest.mark.parametrize("page", PAGES)
def test_math_is_typeset(site, page):
    r = site.report(page)
    if r["math"]:
        assert r["mathjax"] == "typeset", f"{page}.html has {r['math']} formulas but MathJax is {r['mathjax']}"
        assert r["mathjax_src"] and all(s.startswith(r["origin"] + "/") for s in r["mathjax_src"]), (
            f"{page}.html: MathJax must come from the site itself, not {r['mathjax_src']}")
    assert r["untypeset"] == [], f"{page}.html: formulas MathJax left as text: {r['untypeset'][:10]}"
    assert r["math_errors"] == [], f"{page}.html: MathJax errors: {r['math_errors'][:10]}"
    raw = [f"{m.group()} in ...{r['text'][max(m.start() - 30, 0):m.end() + 30]}...".replace("\n", " ")
           for m in RAW_LATEX.finditer(r["text"])]
    assert raw == [], f"{page}.html: raw LaTeX in the visible text (outside code): {raw[:10]}"


@pytest.mark.parametrize("page", PAGES)
def test_nothing_is_fetched_from_another_host(site, page):
    r = site.report(page)
    foreign = [u for u in r["resources"] if not u.startswith((r["origin"] + "/", "data:", "blob:"))]
    assert foreign == [], f"{page}.html fetched from another host (the website must work offline): {foreign}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_has_a_figure(site, chapter):
    figures = [i for i in site.report(chapter)["images"] if i["in_output"] and i["ok"]]
    assert figures, f"{chapter}.html: no figure (a loaded image) in any cell output"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_widgets_show_their_default_figure(site, chapter):
    widgets = site.report(chapter)["widgets"]
    makers = _cells_making_widgets(chapter)
    if makers:
        assert widgets, (f"{chapter}.html: its notebook makes widgets ({makers}) but the page shows "
                         "no widget output")
    for n, w in enumerate(widgets):
        assert w["in_output"] and w["figures"] > 0, (
            f"{chapter}.html: widget {n + 1} of {len(widgets)} has no default figure in its cell output")


def test_search_answers(site):
    site.require()
    from selenium.common.exceptions import TimeoutException
    from selenium.webdriver.support.ui import WebDriverWait

    site.severe_log()
    site.driver.get(site.base + "search.html?q=gradient")
    # Sphinx's searchtools.js writes "Search finished, found N page(s)..." or "Your search did
    # not match any documents..." into p.search-summary once it is done
    finished = "return (document.querySelector('p.search-summary') || {}).innerText || ''"
    try:
        WebDriverWait(site.driver, PAGE_TIMEOUT_S).until(
            lambda d: re.search(r"Search finished|did not match", d.execute_script(finished)))
    except TimeoutException:
        shown = site.driver.execute_script("return document.querySelector('main, body').innerText")
        pytest.fail(f"search.html?q=gradient did not finish within {PAGE_TIMEOUT_S} s; the page shows:\n"
                    f"{shown[:600]}\nconsole: {site.severe_log()}", pytrace=False)
    links = [a.get_attribute("href") for a in site.driver.find_elements("css selector", "ul.search li a")]
    assert any("/notebooks/" in h for h in links), (
        f"searching 'gradient' found no chapter: {site.driver.execute_script(finished)!r}, links {links}")
    assert site.severe_log() == [], "search.html: errors in the browser's console"


class _LoadedURLs(html.parser.HTMLParser):
    """The URLs a page makes the browser fetch: scripts, style sheets, icons, images, frames."""

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in ("script", "img", "iframe", "source", "audio", "video", "embed"):
            self.urls += [a[k] for k in ("src", "srcset") if a.get(k)]
        if tag == "link" and a.get("href") and (a.get("rel") or "") not in ("canonical", "next", "prev", "index", "search"):
            self.urls.append(a["href"])
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.inline.append(data)


CDN = re.compile(r"cdn\.jsdelivr\.net|unpkg\.com|cdnjs\.cloudflare\.com|mathjax\.org|googleapis\.com|gstatic\.com")


def test_no_page_points_at_another_host():
    if not (HTML / "index.html").is_file():
        pytest.fail(BUILD_HINT, pytrace=False)
    bad = []
    for f in sorted(HTML.rglob("*.html")):
        if "_static" in f.relative_to(HTML).parts:
            continue
        p = _LoadedURLs()
        p.feed(f.read_text(errors="replace"))
        rel = f.relative_to(HTML).as_posix()
        bad += [f"{rel}: {u}" for u in p.urls if re.match(r"(https?:)?//", u)]
        bad += [f"{rel}: inline script mentions {m.group()}" for s in p.inline for m in CDN.finditer(s)]
    assert bad == [], f"built pages that load from another host (the website must work offline): {bad[:20]}"
