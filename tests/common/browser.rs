//! A real headless Chromium driven over the W3C WebDriver protocol by
//! chromedriver (Debian's chromium and chromium-driver, installed with
//! apt-get when missing), through the `fantoccini` client.

use fantoccini::{Client, ClientBuilder, Locator};
use serde_json::json;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long an element may take to appear or show a text.
const PATIENCE: Duration = Duration::from_secs(15);

pub(crate) struct Browser {
    driver: Child,
    client: Client,
    profile: std::path::PathBuf,
}

fn installed() -> bool {
    Command::new("chromedriver")
        .arg("--version")
        .output()
        .is_ok()
        && std::path::Path::new("/usr/bin/chromium").exists()
}

impl Browser {
    /// Starts chromedriver and a headless Chromium session; `None` when they
    /// cannot be installed.
    pub(crate) async fn start() -> Option<Browser> {
        static INSTALL: std::sync::Once = std::sync::Once::new();
        INSTALL.call_once(|| {
            if !installed() {
                super::apt_install("chromium chromium-driver");
            }
        });
        if !installed() {
            return None;
        }
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let driver = Command::new("chromedriver")
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let profile = std::env::temp_dir().join(format!("firehose-chromium-{port}"));
        let caps = json!({"browserName": "chrome", "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--disable-quic", "--window-size=1280,900",
                     format!("--user-data-dir={}", profile.display())]}});
        let serde_json::Value::Object(caps) = caps else {
            unreachable!("a JSON object")
        };
        let mut builder =
            ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new());
        builder.capabilities(caps);
        // Retry the connection while chromedriver starts (no fixed sleep).
        let url = format!("http://127.0.0.1:{port}");
        let deadline = Instant::now() + Duration::from_secs(20);
        let client = loop {
            match builder.connect(&url).await {
                Ok(client) => break client,
                Err(e) => {
                    assert!(Instant::now() < deadline, "chromedriver did not start: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        };
        Some(Browser {
            driver,
            client,
            profile,
        })
    }

    pub(crate) async fn goto(&self, url: &str) {
        self.client.goto(url).await.expect("navigate");
    }

    /// The element with this id (a CSS selector after `#`), waited for.
    async fn element(&self, id: &str) -> fantoccini::elements::Element {
        let css = format!("#{id}");
        self.client
            .wait()
            .at_most(PATIENCE)
            .every(Duration::from_millis(50))
            .for_element(Locator::Css(&css))
            .await
            .unwrap_or_else(|e| panic!("no element {css}: {e}"))
    }

    /// Types into the input with this id.
    pub(crate) async fn fill(&self, id: &str, text: &str) {
        let e = self.element(id).await;
        e.clear().await.expect("clear");
        e.send_keys(text).await.expect("type");
    }

    /// Clicks the element with this id.
    pub(crate) async fn click(&self, id: &str) {
        self.element(id).await.click().await.expect("click");
    }

    /// Waits until the element's visible text contains `text`.
    pub(crate) async fn wait_for_text(&self, id: &str, text: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            // The page may re-render the element between the find and the read.
            let got = self.element(id).await.text().await.unwrap_or_default();
            if got.contains(text) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "#{id} never showed {text:?}; it shows {got:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// [`Browser::start`], or a panic naming what is missing: the page
    /// tests need a real browser.
    pub(crate) async fn needed() -> Browser {
        Self::start().await.unwrap_or_else(|| {
            panic!(
                "chromium and chromedriver are needed (apt-get install -y chromium chromium-driver)"
            )
        })
    }

    /// Logs in on the page as `login` (password `password123`).
    pub(crate) async fn log_in(&self, login: &str) {
        self.fill("li-identifier", login).await;
        self.fill("li-password", "password123").await;
        self.click("login").await;
    }

    /// Runs an asynchronous script in the page (its last argument is the
    /// callback that returns its result).
    pub(crate) async fn run_async(
        &self,
        script: &str,
        args: Vec<serde_json::Value>,
    ) -> serde_json::Value {
        self.client
            .execute_async(script, args)
            .await
            .expect("the script finishes")
    }

    /// A PNG of the page.
    pub(crate) async fn screenshot(&self) -> Vec<u8> {
        self.client.screenshot().await.expect("screenshot")
    }

    pub(crate) async fn stop(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill();
        let _ = self.driver.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = self.driver.kill();
    }
}
