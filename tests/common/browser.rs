//! A real headless Chromium driven over the W3C WebDriver protocol by
//! chromedriver (Debian's chromium and chromium-driver, installed with
//! apt-get when missing).

use serde_json::{json, Value};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Browser {
    driver: Child,
    base: String,
    session: String,
    http: reqwest::Client,
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
    pub async fn start() -> Option<Browser> {
        if !installed() {
            let _ = Command::new("sh")
                .arg("-c")
                .arg("(apt-get update -qq && apt-get install -y -qq chromium chromium-driver) >/dev/null 2>&1")
                .status();
        }
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
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let deadline = Instant::now() + Duration::from_secs(20);
        while http.get(format!("{base}/status")).send().await.is_err() {
            assert!(Instant::now() < deadline, "chromedriver did not start");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let profile = std::env::temp_dir().join(format!("firehose-chromium-{port}"));
        let caps = json!({"capabilities": {"alwaysMatch": {"browserName": "chrome", "goog:chromeOptions": {
            "binary": "/usr/bin/chromium",
            "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--disable-quic", "--window-size=1280,900",
                     format!("--user-data-dir={}", profile.display())]}}}});
        let resp: Value = http
            .post(format!("{base}/session"))
            .json(&caps)
            .send()
            .await
            .ok()?
            .json()
            .await
            .ok()?;
        let session = resp["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session: {resp}"))
            .to_string();
        Some(Browser {
            driver,
            base,
            session,
            http,
            profile,
        })
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let url = format!("{}/session/{}{}", self.base, self.session, path);
        let mut req = self.http.request(method, url);
        if let Some(b) = body {
            req = req.json(&b);
        }
        let v: Value = req.send().await.unwrap().json().await.unwrap();
        v["value"].clone()
    }

    pub async fn goto(&self, url: &str) {
        self.call(reqwest::Method::POST, "/url", Some(json!({"url": url})))
            .await;
    }

    async fn element(&self, id: &str) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let v = self
                .call(
                    reqwest::Method::POST,
                    "/element",
                    Some(json!({"using": "css selector", "value": format!("#{id}")})),
                )
                .await;
            if let Some(e) = v
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(|e| e.as_str())
            {
                return e.to_string();
            }
            assert!(Instant::now() < deadline, "no element #{id}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Types into the input with this id.
    pub async fn fill(&self, id: &str, text: &str) {
        let e = self.element(id).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{e}/clear"),
            Some(json!({})),
        )
        .await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{e}/value"),
            Some(json!({"text": text})),
        )
        .await;
    }

    /// Clicks the element with this id.
    pub async fn click(&self, id: &str) {
        let e = self.element(id).await;
        self.call(
            reqwest::Method::POST,
            &format!("/element/{e}/click"),
            Some(json!({})),
        )
        .await;
    }

    /// Waits until the element's visible text contains `text`.
    pub async fn wait_for_text(&self, id: &str, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let e = self.element(id).await;
            let got = self
                .call(reqwest::Method::GET, &format!("/element/{e}/text"), None)
                .await;
            if got.as_str().is_some_and(|t| t.contains(text)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "#{id} never showed {text:?}; it shows {got}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// A PNG of the page.
    pub async fn screenshot(&self) -> Vec<u8> {
        let b64 = self.call(reqwest::Method::GET, "/screenshot", None).await;
        decode_base64(b64.as_str().unwrap_or(""))
    }

    pub async fn stop(mut self) {
        let _ = self
            .http
            .delete(format!("{}/session/{}", self.base, self.session))
            .send()
            .await;
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

fn decode_base64(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let (mut out, mut bits, mut n) = (Vec::new(), 0u32, 0);
    for v in s.bytes().filter_map(val) {
        bits = (bits << 6) | u32::from(v);
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    out
}
