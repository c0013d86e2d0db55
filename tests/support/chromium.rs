//! Headless Chromium (Debian's `chromium`) for the tests of the web pages: `--dump-dom` for
//! DOM assertions, `--screenshot` for pictures, and a PNG reader to look at them. Without
//! Chromium a test fails with the reason (CI installs it, see `.ci/run`): never a pass that
//! checked nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Chromium binary; fails the test with the reason when there is none.
pub fn chromium() -> Option<PathBuf> {
    let found = [
        "/usr/bin/chromium",
        "/usr/bin/chromium-browser",
        "/usr/bin/google-chrome",
    ]
    .iter()
    .map(PathBuf::from)
    .find(|p| p.is_file());
    // A test that cannot run fails with its reason: never a pass that checked nothing.
    assert!(
        found.is_some(),
        "chromium is not installed: .ci/run must install Debian's chromium package (APT_PACKAGES) (apt-get install chromium)"
    );
    found
}

/// Run headless Chromium on `url` with extra arguments (a virtual-time budget of 5 s for the
/// page's scripts unless `extra` gives one); its standard output.
pub fn run_chromium(bin: &Path, profile: &Path, url: &str, extra: &[&str]) -> String {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
    ]);
    if !extra.iter().any(|a| a.starts_with("--virtual-time-budget")) {
        cmd.arg("--virtual-time-budget=5000");
    }
    cmd.arg(format!("--user-data-dir={}", profile.display()))
        .args(extra)
        .arg(url);
    let out = cmd.output().expect("run chromium");
    assert!(
        out.status.success(),
        "chromium failed: {}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The page at `url` as headless Chromium rendered it ([`rendered`] of its `--dump-dom`), with a
/// fresh profile in the scratch directory `name` (removed after).
pub async fn rendered_page(bin: &Path, name: &str, url: String) -> String {
    let work = super::scratch(name);
    let (b, p) = (bin.to_path_buf(), work.join("profile"));
    let dom = tokio::task::spawn_blocking(move || run_chromium(&b, &p, &url, &["--dump-dom"]))
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&work);
    rendered(dom)
}

/// Only what the page rendered: the DOM without its `<script>` elements (inline or not).
pub fn rendered(dom: String) -> String {
    let mut out = String::with_capacity(dom.len());
    let mut rest = dom.as_str();
    while let Some(a) = rest.find("<script") {
        out.push_str(&rest[..a]);
        rest = rest[a..]
            .find("</script>")
            .map_or("", |b| &rest[a + b + "</script>".len()..]);
    }
    out.push_str(rest);
    out
}

/// A decoded screenshot: width, height and RGBA pixels.
pub struct Image {
    /// Width in pixels.
    pub width: u32,
    /// Height in pixels.
    pub height: u32,
    /// RGBA, 4 bytes a pixel, row after row.
    pub rgba: Vec<u8>,
}

impl Image {
    /// Decode a PNG (any colour type; without alpha every pixel is opaque).
    pub fn decode(png_bytes: &[u8]) -> Image {
        let mut decoder = png::Decoder::new(std::io::Cursor::new(png_bytes));
        decoder.set_transformations(png::Transformations::normalize_to_color8());
        let mut reader = decoder.read_info().expect("a PNG");
        let mut buf = vec![0; reader.output_buffer_size().expect("PNG size")];
        let info = reader.next_frame(&mut buf).expect("PNG pixels");
        buf.truncate(info.buffer_size());
        let rgba = match info.color_type {
            png::ColorType::Rgba => buf,
            png::ColorType::Rgb => buf
                .chunks_exact(3)
                .flat_map(|p| [p[0], p[1], p[2], 255])
                .collect(),
            png::ColorType::GrayscaleAlpha => buf
                .chunks_exact(2)
                .flat_map(|p| [p[0], p[0], p[0], p[1]])
                .collect(),
            png::ColorType::Grayscale => buf.iter().flat_map(|&g| [g, g, g, 255]).collect(),
            png::ColorType::Indexed => unreachable!("expanded by normalize_to_color8"),
        };
        Image {
            width: info.width,
            height: info.height,
            rgba,
        }
    }

    /// Pixels fully transparent (alpha 0) and pixels drawn (alpha above 0).
    pub fn alpha_counts(&self) -> (usize, usize) {
        let clear = self.rgba.chunks_exact(4).filter(|p| p[3] == 0).count();
        (clear, self.rgba.len() / 4 - clear)
    }
}
