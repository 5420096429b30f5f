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

from devtools.explorer import overlays  # noqa: E402
from devtools.explorer.main import EmberPteAdapter  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ENV = {**os.environ, "PYTHONPATH": f"{ROOT}:{ROOT}/runtime/python", "SE_OFFLINE": "true"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(runtime, tmp_path_factory):
    """(url, program path): small_cnn lowered to XNNPACK, profiled once, served with its overlays."""
    import torch

    tmp = tmp_path_factory.mktemp("browser")
    pte, etdp = str(tmp / "small_cnn_xnnpack.pte"), str(tmp / "small_cnn_xnnpack.etdp")
    export = [sys.executable, "-m", "ember.cli", "export", "small_cnn", "-o", pte, "--delegate", "xnnpack", "-q"]
    subprocess.run(export + ["--no-kernel-check", "--etrecord"], check=True, env=ENV, cwd=ROOT)
    _, trace = runtime.load(pte).run("forward", [torch.randn(1, 3, 32, 32)], profile=True)
    trace.save(etdp)
    port = _free_port()
    cmd = [sys.executable, "-u", "-m", "devtools.explorer.launch", pte, "--etdump", etdp, "--no-open"]
    server = subprocess.Popen(
        cmd + ["--port", str(port)], env=ENV, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
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
    yield url, pte
    server.terminate()
    server.wait(timeout=10)


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
    return sum(1 for p in img.getdata() if all(abs(a - b) <= tol for a, b in zip(p, want)))


def _ink(img: Image.Image) -> int:
    return sum(1 for p in img.getdata() if min(p) < 200)


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
    # The XNNPACK nodes are drawn once the delegate's group opens: far more ink than three boxes.
    assert _ink(expanded) > 1.5 * _ink(collapsed), (_ink(collapsed), _ink(expanded))
    hot = sum(_near(expanded, c) for c in overlays.SCALE[1:])
    assert hot > 100, f"no node painted in the time overlay's colours ({hot} pixels)"
    shots = os.environ.get("EMBER_EXPLORE_SCREENSHOTS")
    if shots:  # docs/images: regenerate with EMBER_EXPLORE_SCREENSHOTS=docs/images
        os.makedirs(shots, exist_ok=True)
        collapsed.save(os.path.join(shots, "explore-graph.png"))
        expanded.save(os.path.join(shots, "explore-time.png"))
