//! Installing what the tests run that a fresh Debian machine lacks:
//! redis-server, curl, nginx, chromium with chromedriver, and schemathesis
//! in a virtual environment.

use super::*;

/// One apt-get at a time in this process: tests run in parallel threads,
/// and a second apt-get would fail on the lock the first holds (this is
/// how four page tests once failed together on a fresh machine). Between
/// processes, apt-get waits for the lock itself.
static APT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Installs `packages` (space-separated) with apt-get; whether it worked.
pub(crate) fn apt_install(packages: &str) -> bool {
    let _one = APT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let apt = "apt-get -o DPkg::Lock::Timeout=600";
    Command::new("sh")
        .arg("-c")
        .arg(format!(
            "({apt} update -qq && {apt} install -y -qq {packages}) >/dev/null 2>&1"
        ))
        .env("DEBIAN_FRONTEND", "noninteractive")
        .status()
        .is_ok_and(|s| s.success())
}

static INSTALL: Once = Once::new();

/// Installs with apt-get what the tests run that a fresh Debian machine
/// lacks: redis-server (for every test) and curl (for the walkthrough).
pub(crate) fn ensure_redis_installed() {
    INSTALL.call_once(|| {
        let missing: Vec<&str> = [
            ("redis-server", "redis-server"),
            ("curl", "curl"),
            ("nginx", "nginx-light"),
        ]
        .into_iter()
        .filter(|(bin, _)| Command::new(bin).arg("--version").output().is_err())
        .map(|(_, package)| package)
        .collect();
        if missing.is_empty() {
            return;
        }
        let ok = apt_install(&missing.join(" "));
        assert!(ok, "{missing:?} missing and apt-get could not install them");
    });
}

static SCHEMATHESIS: Once = Once::new();

/// The schemathesis CLI: `st` on the PATH, or one installed with pip into a
/// virtual environment under the target directory (on a fresh Debian
/// machine, after apt-get installs python3-venv).
pub(crate) fn schemathesis() -> std::path::PathBuf {
    let venv = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/schemathesis");
    let st_in_venv = venv.join("bin/st");
    if Command::new("st")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return "st".into();
    }
    SCHEMATHESIS.call_once(|| {
        if st_in_venv.exists() {
            return;
        }
        let script = format!(
            "(python3 -m venv --help >/dev/null 2>&1 && python3 -m ensurepip --version >/dev/null 2>&1 \
               || (apt-get -o DPkg::Lock::Timeout=600 update -qq \
                   && apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-venv python3-pip)) >/dev/null 2>&1; \
             python3 -m venv {venv} && {venv}/bin/pip install -q schemathesis",
            venv = venv.display()
        );
        let _one = APT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let ok = Command::new("sh")
            .arg("-c")
            .arg(script)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "could not install schemathesis with pip");
    });
    st_in_venv
}

/// A virtual environment under the target directory named `name`, with
/// `packages` installed by pip (once per test process; python3-venv
/// installed with apt-get where missing): its `python`.
pub(crate) fn python_venv(name: &str, packages: &str) -> std::path::PathBuf {
    static VENVS: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = VENVS
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let venv = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(name);
    let python = venv.join("bin/python");
    let ready = venv.join(".installed");
    if ready.exists() {
        return python;
    }
    let script = format!(
        "(python3 -m venv --help >/dev/null 2>&1 && python3 -m ensurepip --version >/dev/null 2>&1 \
           || (apt-get -o DPkg::Lock::Timeout=600 update -qq \
               && apt-get -o DPkg::Lock::Timeout=600 install -y -qq python3-venv python3-pip)) >/dev/null 2>&1; \
         python3 -m venv {venv} && {venv}/bin/pip install -q {packages} && touch {ready}",
        venv = venv.display(),
        ready = ready.display(),
    );
    let _apt = APT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let ok = Command::new("sh")
        .arg("-c")
        .arg(script)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "could not install {packages} with pip");
    python
}

/// A folder under `target/` with the npm `packages` installed in its
/// `node_modules` (Debian's `nodejs` and `npm` installed first when
/// missing), made once: a script run with this folder as its working
/// directory imports them.
#[allow(dead_code)]
pub(crate) fn node_modules(name: &str, packages: &str) -> std::path::PathBuf {
    static NODES: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = NODES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("target")
        .join(name);
    let ready = dir.join(".installed");
    if ready.exists() {
        return dir;
    }
    let has_node = Command::new("sh")
        .arg("-c")
        .arg("node --version && npm --version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_node {
        assert!(
            apt_install("nodejs npm"),
            "could not install nodejs and npm"
        );
    }
    std::fs::create_dir_all(&dir).expect("the folder for node_modules");
    let ok = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "cd {dir} && echo '{{\"type\":\"module\",\"private\":true}}' > package.json \
             && npm install --silent --no-audit --no-fund {packages} && touch {ready}",
            dir = dir.display(),
            ready = ready.display(),
        ))
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "could not install {packages} with npm");
    dir
}

#[allow(dead_code)]
/// Runs `program` with `argv` (its script among them) in `dir`; the last
/// line of its output as JSON.
pub(crate) async fn run_client(program: &str, dir: &std::path::Path, argv: &[&str]) -> Value {
    let out = tokio::process::Command::new(program)
        .current_dir(dir)
        .args(argv)
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(120), out)
        .await
        .expect("the client finishes within 2 minutes")
        .expect("the client runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "the client failed: {stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|_| panic!("the client's JSON: {stdout}"))
}
