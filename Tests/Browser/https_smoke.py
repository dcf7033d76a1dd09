"""The web client over https, in headless Chromium, from chronir-server's own TLS listener.

Chromium trusts exactly the test server's key (``--ignore-certificate-errors-spki-list`` with its
SPKI pin: any other certificate error still fails), loads the page, registers, and its realtime
socket goes live over ``wss://`` (the server's Origin allow-list names the https origin). The page is
a secure context, the API answers carry ``Strict-Transport-Security``, and Chromium logs no error.

Env: CHRONIR_URL (https://127.0.0.1:PORT), CHRONIR_SPKI (base64 SHA-256 of the server key's SPKI).
.ci/browser.sh starts the server and runs this after the main scenario (Tests/Browser/e2e.py).
"""
import os
import sys
import tempfile
import time

from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

BASE = os.environ["CHRONIR_URL"].rstrip("/")
SPKI = os.environ["CHRONIR_SPKI"]
CHROME = os.environ.get("CHROME_BIN", "/usr/bin/chromium")
DRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
TIMEOUT_S = 20


def wait(d, condition, what):
    try:
        return WebDriverWait(d, TIMEOUT_S, ignored_exceptions=(StaleElementReferenceException,)).until(condition)
    except Exception as e:
        raise AssertionError(f"timed out after {TIMEOUT_S} s waiting for: {what}") from e


def text_in(selector, text):
    return lambda d: any(text in e.text for e in d.find_elements(By.CSS_SELECTOR, selector)) or None


def fill(d, selector, value):
    el = wait(d, lambda drv: drv.find_element(By.CSS_SELECTOR, selector), selector)
    el.clear()
    el.send_keys(value)


def main():
    assert BASE.startswith("https://"), BASE
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROME
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900",
                f"--user-data-dir={tempfile.mkdtemp(prefix='chronir-https-')}", "--no-first-run", "--lang=en-GB",
                f"--ignore-certificate-errors-spki-list={SPKI}"):
        opts.add_argument(arg)
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    d = webdriver.Chrome(options=opts, service=webdriver.ChromeService(executable_path=DRIVER))
    try:
        d.get(BASE + "/register")
        wait(d, text_in("h1", "Create an account"), "the register page over https")
        assert d.execute_script("return location.protocol") == "https:"
        assert d.execute_script("return window.isSecureContext") is True
        fill(d, "input[name=display_name]", "Tess")
        fill(d, "input[name=email]", f"tess-{int(time.time() * 1000)}@example.com")
        fill(d, "input[name=password]", "correct horse battery")
        d.find_element(By.CSS_SELECTOR, "form button[type=submit]").click()
        wait(d, text_in("h1", "My groups"), "My groups after registering over https")
        wait(d, lambda drv: drv.find_element(By.CSS_SELECTOR, "#connection").get_attribute("data-state") == "live",
             "the realtime connection live over wss://")
        hsts = d.execute_async_script("""
            const done = arguments[0];
            fetch('/v1/me')  // the HttpOnly session cookie
              .then((r) => done(`${r.status} ${r.headers.get('strict-transport-security')}`))
              .catch((e) => done(String(e)));""")
        assert hsts.startswith("200 max-age="), hsts
        # over https the session cookie is __Host- prefixed and Secure (and HttpOnly, SameSite=Strict)
        cookie = next(c for c in d.execute_cdp_cmd("Network.getCookies", {"urls": [BASE]})["cookies"] if c["name"] == "__Host-chronir_session")
        assert cookie["secure"] and cookie["httpOnly"] and cookie["sameSite"] == "Strict", cookie
        errors = [e["message"] for e in d.get_log("browser") if e["level"] == "SEVERE"]
        assert not errors, errors
        print(f"https: page, API ({hsts}) and wss:// realtime over chronir-server's own TLS: ok")
    finally:
        d.quit()


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"https smoke FAILED: {e}", file=sys.stderr)
        sys.exit(1)
