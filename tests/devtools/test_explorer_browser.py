"""`ember explore` in a real browser: Model Explorer's server with the .pte adapter on a delegated zoo model,
loaded headless by Debian's chromium through its chromedriver (Selenium Manager is never asked to download one).
Checks the graph's node count, that the delegate's group expands, and that the time overlay colours nodes."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import time

import pytest

pytest.importorskip("model_explorer")
pytest.importorskip("selenium")
CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
if not (os.path.exists(CHROMIUM) and os.path.exists(DRIVER)):
    pytest.skip("needs Debian's chromium and chromium-driver (./setup.sh installs them)", allow_module_level=True)

from PIL import Image  # noqa: E402
from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

from devtools.explorer import check, overlays  # noqa: E402
from devtools.explorer.main import EmberPteAdapter  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT}/runtime/python", "SE_OFFLINE": "true"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


def _serve(pte, etdp=None):
    """Starts `python -m devtools.explorer.launch` on pte (with the trace, if any); returns (server, url)."""
    port = _free_port()
    cmd = [sys.executable, "-u", "-m", "devtools.explorer.launch", pte, *(["--etdump", etdp] if etdp else [])]
    server = subprocess.Popen(
        cmd + ["--no-open", "--port", str(port)],
        env=ENV,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = None
    deadline = time.monotonic() + 60
    while url is None and time.monotonic() < deadline:
        line = server.stdout.readline()
        if not line:
            break
        if line.startswith(f"http://localhost:{port}/"):
            url = line.strip()
    if url is None:
        server.kill()
        pytest.fail(f"Model Explorer did not start: {server.stdout.read()}")
    return server, url


def _stop(server):
    server.terminate()
    server.wait(timeout=10)


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """(url, program path): small_cnn lowered to XNNPACK, served with its time and memory overlays."""
    tmp = tmp_path_factory.mktemp("browser")
    pte, etdp = str(tmp / "small_cnn_xnnpack.pte"), str(tmp / "small_cnn_xnnpack.etdp")
    export = [sys.executable, "-m", "ember.cli", "export", "small_cnn", "-o", pte, "--delegate", "xnnpack", "-q"]
    subprocess.run(export + ["--no-kernel-check", "--etrecord"], check=True, env=ENV, cwd=ROOT)
    # A written trace, not a measured one: a build with both the backend and the event tracer would compile every
    # kernel again for this test; the file is read through the same path as a measured one.
    with open(etdp, "wb") as f:
        f.write(check.written_trace(pte))
    server, url = _serve(pte, etdp)
    yield url, pte
    _stop(server)


@pytest.fixture(scope="module")
def browser():
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for a in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1400,900"):
        opts.add_argument(a)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    yield driver
    driver.quit()


def _graph_pixels(driver) -> Image.Image:
    canvas = max(driver.find_elements(By.TAG_NAME, "canvas"), key=lambda c: c.size["width"] * c.size["height"])
    return Image.open(io.BytesIO(canvas.screenshot_as_png)).convert("RGB")


def _near(img: Image.Image, hex_color: str, tol: int = 24) -> int:
    want = tuple(int(hex_color[k : k + 2], 16) for k in (1, 3, 5))
    return sum(n for n, p in img.getcolors(1 << 24) if all(abs(a - b) <= tol for a, b in zip(p, want)))


def test_page_shows_graph_expands_delegate_and_colours_by_time(served, browser):
    url, pte = served
    expected = len(EmberPteAdapter().convert(pte, {})["graphs"][0].nodes)
    browser.get(url)
    wait = WebDriverWait(browser, 30)
    wait.until(lambda d: "op node count" in d.find_element(By.TAG_NAME, "body").text)
    info = browser.find_element(By.TAG_NAME, "body").text.split("op node count", 1)[1].split()
    assert int(info[0]) == expected
    time.sleep(1)
    collapsed = _graph_pixels(browser)
    browser.find_element(By.CSS_SELECTOR, ".mat-icon-container.expand-all").click()
    time.sleep(2)
    expanded = _graph_pixels(browser)
    shots = os.environ.get("EMBER_EXPLORE_SCREENSHOTS")
    if shots:  # docs/images: regenerate with EMBER_EXPLORE_SCREENSHOTS=docs/images
        os.makedirs(shots, exist_ok=True)
        collapsed.save(os.path.join(shots, "explore-graph.png"))
        expanded.save(os.path.join(shots, "explore-time.png"))
    assert expanded.tobytes() != collapsed.tobytes(), "expanding all layers changed nothing"
    # The only timed instruction is the delegate call, whose node sits inside the delegate's group: collapsed, the
    # group shows a thin bar in the scale's darkest colour (the slowest node's); opened, the call's whole box has it.
    hot = [_near(img, overlays.SCALE[-1]) for img in (collapsed, expanded)]
    assert hot[0] > 0 and hot[1] > hot[0] + 300, f"pixels in the time overlay's top colour, collapsed/expanded: {hot}"


def test_memory_overlay_colours_the_plain_graph(browser, tmp_path):
    """small_cnn on Ember's kernels without a trace: the memory plan is the first overlay, so it colours the graph;
    the largest writer (the first convolution's output) has the scale's darkest colour."""
    pte = str(tmp_path / "small_cnn.pte")
    export = [sys.executable, "-m", "ember.cli", "export", "small_cnn", "-o", pte, "-q", "--no-kernel-check"]
    subprocess.run(export + ["--etrecord"], check=True, env=ENV, cwd=ROOT)
    server, url = _serve(pte)
    try:
        browser.get(url)
        WebDriverWait(browser, 30).until(lambda d: "op node count" in d.find_element(By.TAG_NAME, "body").text)
        time.sleep(2)
        img = _graph_pixels(browser)
    finally:
        _stop(server)
    shots = os.environ.get("EMBER_EXPLORE_SCREENSHOTS")
    if shots:
        os.makedirs(shots, exist_ok=True)
        img.save(os.path.join(shots, "explore-memory.png"))
    assert _near(img, overlays.SCALE[-1]) > 100, "no node in the memory overlay's top colour"
