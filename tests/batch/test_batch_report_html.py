"""`codeloop batch report RESULTS --html FILE`: one self-contained page, checked in a real browser.

The results come from a real batch against the routed fake API (a success with a diff, a crash,
a max_turns); the page is opened in headless Chromium over the DevTools protocol (tests/batch/
cdp.py): it renders, its charts are drawn (SVG boxes and bars of nonzero size), each task shows
its diff and transcript, the filter works, and nothing reaches the console as an error. Skipped
when no Chromium is installed (.ci/run installs Debian's).
"""

import re

import pytest

from batchhelpers import RoutedAPI, make_repo, marker, read_results, run_batch, write_file_script, write_tasks
from cdp import Browser, find_chromium
from fakeapi import sse, tool_use


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("report")
    make_repo(tmp / "proj", {"hello.py": "print('hi')\n"})
    ids = ["good", "crash", "loop"]
    write_tasks(tmp / "tasks.jsonl", [{"id": t, "prompt": f"{marker(t)} <b>do</b> it", "repo": "proj",
                                       "allowed_tools": ["Bash"], "max_turns": 2} for t in ids])
    api = RoutedAPI({"good": write_file_script("out_good.txt", "from <good> & co"),
                     "crash": (sse(tool_use("Bash", {"command": "kill -9 $PPID"})),),
                     "loop": (sse(tool_use("Bash", {"command": "echo again"}), input_tokens=5000),)})
    out = tmp / "results.jsonl"
    with api.serve() as url:
        r = run_batch(["tasks.jsonl", "--out", str(out)], cwd=tmp, url=url)
    assert r.returncode == 1, r.stderr
    assert {x["outcome"] for x in read_results(out)} == {"success", "crashed", "max_turns"}
    r = run_batch(["report", str(out), "--html", "page.html"], cwd=tmp)
    assert r.returncode == 0 and "wrote page.html" in r.stderr, r.stderr
    return tmp / "page.html"


def test_html_report_is_self_contained(report):
    page = report.read_text()
    # nothing to fetch when viewed: no external scripts, styles, images or fonts
    assert not re.search(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "<link" not in page and "@import" not in page and "url(" not in page
    # task text is escaped, never markup
    assert "&lt;b&gt;do&lt;/b&gt;" in page and "<b>do</b>" not in page
    assert "+from &lt;good&gt; &amp; co" in page


def test_html_report_renders_in_chromium(report, tmp_path):
    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium installed (apt-get install chromium)")
    browser = Browser(exe, tmp_path / "profile")
    try:
        page = browser.open_page(report.resolve().as_uri())
        shown = browser.evaluate(page, """(() => {
            const box = el => { const r = el.getBoundingClientRect(); return [r.width, r.height]; };
            return {
              title: document.title,
              charts: [...document.querySelectorAll('svg.chart')].map(box),
              bars: [...document.querySelectorAll('svg.chart rect.bar')].filter(r => {
                  const [w, h] = box(r); return w > 0 && h > 0; }).length,
              tasks: [...document.querySelectorAll('details.task')].map(d => d.querySelector('b').textContent),
              rows: document.querySelectorAll('.tables tr').length,
            }; })()""")
        assert shown["title"] == "codeloop batch: results.jsonl"
        assert len(shown["charts"]) == 3 and all(w > 100 and h > 50 for w, h in shown["charts"]), shown
        assert shown["bars"] >= 3 + 2  # one per outcome, and at least one per histogram
        assert sorted(shown["tasks"]) == ["crash", "good", "loop"] and shown["rows"] >= 4
        opened = browser.evaluate(page, """(() => {
            document.getElementById('expand').click();
            const good = [...document.querySelectorAll('details.task')].find(
                d => d.querySelector('b').textContent === 'good');
            const diff = good.querySelector('pre.diff');
            return {open: good.open, diffHeight: diff.getBoundingClientRect().height, diff: diff.textContent,
                    added: good.querySelectorAll('pre.diff .add').length,
                    assistant: good.querySelectorAll('.transcript .msg.assistant').length,
                    calls: [...good.querySelectorAll('.transcript .tool.call b')].map(b => b.textContent),
                    prompt: good.querySelector('.transcript .msg.user pre').textContent}; })()""")
        assert opened["open"] and opened["diffHeight"] > 0 and "+from <good> & co" in opened["diff"]
        assert opened["added"] >= 1 and opened["assistant"] == 2 and opened["calls"] == ["Bash"]
        assert "[task:good] <b>do</b> it" in opened["prompt"]
        visible = browser.evaluate(page, """(() => {
            const box = document.getElementById('filter');
            box.value = 'crash'; box.dispatchEvent(new Event('input'));
            return [...document.querySelectorAll('details.task')].filter(d => !d.classList.contains('hidden'))
                .map(d => d.querySelector('b').textContent); })()""")
        assert visible == ["crash"]
        assert browser.errors() == []
        # the check above can fail: an error in the page is seen
        browser.evaluate(page, "console.error('probe')")
        browser.wait_event("Runtime.consoleAPICalled", timeout=30)
        assert len(browser.errors()) == 1
    finally:
        browser.close()
