"""In a real headless Chromium: a right-to-left override in a debate stays inside its string,
and a page of another site can neither sign a judge out nor swap the signed-in judge.

Screenshots go to $LLMDEBATE_SCREENSHOTS when set, else to the test's tmp dir."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from judging_study import assign, make_run, rlo_dataset, server, with_base, write_judges

playwright = pytest.importorskip("playwright.sync_api")

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
EVIL = "http://evil.test"

# Where the closing quote after an answer that holds an unclosed U+202E is drawn, against the
# answer's word "indeed": right of it when the answer is isolated. The same heading as plain
# text (no <bdi>, the override left open as the dataset wrote it) is measured beside it: there
# the override pulls the quote to the left.
MEASURE = """
(h) => {
  function place(root) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    let word = null, quote = null;
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      const i = n.data.indexOf("indeed");
      if (i >= 0) { word = document.createRange(); word.setStart(n, i); word.setEnd(n, i + 6); }
      const q = n.data.lastIndexOf("\u201d");
      if (q >= 0) { quote = document.createRange(); quote.setStart(n, q); quote.setEnd(n, q + 1); }
    }
    const w = word.getBoundingClientRect(), r = quote.getBoundingClientRect();
    return {word_left: w.left, word_right: w.right, quote_left: r.left, quote_right: r.right};
  }
  const isolated = place(h);
  const plain = document.createElement("h3");
  plain.textContent = h.textContent.replace(/\u202c/g, "");  // as the dataset wrote it
  h.parentNode.insertBefore(plain, h.nextSibling);
  const control = place(plain);
  plain.remove();
  return {isolated, control};
}
"""


def _shots(tmp_path: Path) -> Path:
    shots = Path(os.environ.get("LLMDEBATE_SCREENSHOTS") or tmp_path / "shots")
    shots.mkdir(parents=True, exist_ok=True)
    return shots


def test_an_override_in_a_debate_stays_in_its_string(tmp_path: Path) -> None:
    shots = _shots(tmp_path)
    run_dir = make_run(
        tmp_path, ["two-sided"], dataset=rlo_dataset(tmp_path), limit=1,
        judge={"kind": "human", "passage": "shown"},
    )
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ["ada", "bo"]), 1)
    with server(run_dir) as base, playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_context(viewport={"width": 900, "height": 1000}).new_page()
            page.goto(with_base(links["ada"], base))
            page.goto(base + "/next")
            heads = page.locator("article.turn h3").filter(has_text="indeed")
            assert heads.count() >= 1
            for n in range(heads.count()):
                got = heads.nth(n).evaluate(MEASURE)
                iso, ctl = got["isolated"], got["control"]
                assert iso["quote_left"] >= iso["word_right"] - 0.5, got
                assert ctl["quote_right"] <= ctl["word_left"] + 0.5, got  # the check can fail
            # the page's own words after the strings read left to right
            assert page.inner_text("#submit") == "Submit"
            page.screenshot(path=str(shots / "rlo-isolated.png"), full_page=True)
        finally:
            browser.close()


def test_another_site_cannot_sign_out_or_swap_the_judge(tmp_path: Path) -> None:
    run_dir = make_run(tmp_path, ["direct"], limit=2)
    links = assign(run_dir, write_judges(tmp_path / "j.yaml", ["ann", "ben"]), 1)
    with server(run_dir) as base, playwright.sync_playwright() as p:
        ben_path = with_base(links["ben"], base)
        pages = {
            f"{EVIL}/logout": (
                f'<form id="f" method="post" action="{base}/logout">'
                '<input name="csrf" value="00000000000000000000000000000000"></form>'
                "<script>document.getElementById('f').submit()</script>"
            ),
            f"{EVIL}/swap": f'<a id="go" href="{ben_path}">a prize</a>',
        }
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            ctx = browser.new_context()
            ctx.route(
                f"{EVIL}/**",
                lambda route: route.fulfill(
                    status=200, content_type="text/html", body=pages[route.request.url]
                ),
            )
            page = ctx.new_page()
            page.goto(with_base(links["ann"], base))
            assert "Welcome, ann" in page.content()

            with page.expect_navigation(url=f"{base}/logout") as nav:
                page.goto(f"{EVIL}/logout")
            assert nav.value is not None and nav.value.status == 403
            page.goto(base + "/")
            assert "Welcome, ann" in page.content()  # still signed in

            page.goto(f"{EVIL}/swap")
            with page.expect_navigation() as nav:
                page.click("#go")
            assert nav.value is not None and nav.value.status == 200
            assert page.locator("#sign-in").count() == 1  # a question, not a sign-in
            page.goto(base + "/")
            assert "Welcome, ann" in page.content()

            page.goto(ben_path)  # opened here, while ann is signed in: asked too
            assert "You are signed in as ann" in page.content()
            with page.expect_navigation():
                page.click("#sign-in")  # the person agrees
            assert "Welcome, ben" in page.content()
        finally:
            browser.close()
