"""Uploading a trace in the browser: a good file is run and compared, a bad one gets one plain
message naming its rows (a hostile file name included), and nothing shows a traceback."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tests.browser.helpers import open_page

pytestmark = pytest.mark.browser

UPLOAD = "[data-testid=stFileUploaderDropzoneInput]"


def _upload(page: Page, name: str, data: bytes) -> None:
    page.locator(UPLOAD).set_input_files({"name": name, "mimeType": "text/csv", "buffer": data})


def test_uploading_a_trace(page: Page, app_url: str):
    open_page(page, f"{app_url}/trace?trc-trace=Your+file", charts=0)
    expect(page.get_by_text("Choose a CSV file above to run it.")).to_be_visible()
    bad = b"arrival_s,prompt_tokens,output_tokens\n0,100,20\n1,-5,20\n2,x,3\n"
    _upload(page, "[click](http://evil.example) #x.csv", bad)
    alert = page.get_by_text("This trace cannot be run")
    expect(alert).to_be_visible()
    assert "row 4" in alert.inner_text()  # the one that is not a number
    assert page.locator("[data-testid=stMain] a[href*='evil']").count() == 0
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    rows = "".join(f"{i * 0.25},{200 + i},{30 + i % 7}\n" for i in range(60))
    _upload(page, "mine.csv", b"arrival_s,prompt_tokens,output_tokens\n" + rows.encode())
    expect(page.get_by_text("60 requests arriving over")).to_be_visible(timeout=60_000)
    page.wait_for_function(
        "() => document.querySelectorAll('[data-testid=stPlotlyChart] .js-plotly-plot').length"
        " === 3",
        timeout=60_000,
    )
    with page.expect_download() as got:
        page.get_by_role("button", name="Download every request's results (CSV)").click()
    assert got.value.suggested_filename == "stepwise-requests.csv"


def test_the_upload_cap_is_on_screen_and_holds(page: Page, app_url: str, shots):
    """The cap is MAX_UPLOAD_MB, not Streamlit's 200 MB: said in the text and in the drop zone,
    and a bigger file is turned away in the browser with a message, never run."""
    from lessons.trace_lab.tool import MAX_UPLOAD_MB

    open_page(page, f"{app_url}/trace?trc-trace=Your+file", charts=0)
    zone = page.locator("[data-testid=stFileUploaderDropzone]")
    expect(zone).to_contain_text(f"{MAX_UPLOAD_MB}MB per file")
    assert "200MB" not in zone.inner_text()
    expect(page.get_by_text(f"Up to {MAX_UPLOAD_MB} MB")).to_be_visible()
    header = b"arrival_s,prompt_tokens,output_tokens\n"
    big = header + b"0,100,20\n" * ((MAX_UPLOAD_MB * 1024 * 1024) // 9 + 1000)
    _upload(page, "big.csv", big)
    expect(page.get_by_text(f"{MAX_UPLOAD_MB}.0MB or smaller")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("requests arriving over")).to_have_count(0)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    zone.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "trace_upload_too_big.png"))


def test_pasting_a_vllm_serve_command(page: Page, app_url: str, shots):
    """Issue 39, item 2: a command pasted over several lines (backslash continuations) is side
    A; what was read shows beside B's controls, and a command that cannot run gets one plain
    line (Markdown in it stays text), with A's controls back."""
    from tests.browser.helpers import READY

    open_page(page, f"{app_url}/trace", charts=3)
    box = page.locator("[data-testid=stTextArea] textarea")
    command = (
        "vllm serve meta-llama/Llama-3.1-8B-Instruct \\\n"
        "    --max-num-seqs 64 --kv-cache-dtype fp8 \\\n"
        "    --max-num-batched-tokens 4096 --port 8000"
    )
    box.fill(command)
    box.press("Control+Enter")
    expect(page.get_by_text("--max-num-seqs 64 -> max_num_seqs = 64")).to_be_visible()
    expect(page.get_by_text("A: policy")).to_have_count(0)
    page.wait_for_function(READY, timeout=60_000)
    expect(page.locator("[data-testid=stException]")).to_have_count(0)
    box.scroll_into_view_if_needed()
    page.screenshot(path=str(shots / "trace_serve_command.png"))
    box.fill("vllm serve '[x](http://evil.example) **b**'")
    box.press("Control+Enter")
    alert = page.get_by_text("This command cannot be run")
    expect(alert).to_be_visible()
    said = alert.inner_text().replace("\u200b", "")  # shown() breaks "http" for autolinks
    assert "model '[x](http://evil.example) **b**' is not in the catalog" in said
    assert page.locator("[data-testid=stMain] a[href*='evil']").count() == 0
    expect(page.get_by_text("A: policy")).to_be_visible()
