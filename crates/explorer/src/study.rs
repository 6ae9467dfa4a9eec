//! Study reports as pages: the `report.md` of a `scalechain study` output directory (the
//! node's `explorer.study_dir`, or one of its subdirectories holding a report) rendered to
//! HTML with its tables and SVG figures — seed figures beside ours, as the report places them —
//! and the directory's files served beside it; or a report chosen from the viewer's disk, whose
//! Markdown the node renders (and forgets) and whose figures the page shows from the files
//! chosen.
//!
//! Markdown is rendered by pulldown-cmark with raw HTML shown as text, and links and images
//! kept only when they are in-page anchors, http(s) URLs or plain relative names (rebased onto
//! the served directory); anything else (`javascript:`, absolute paths, `..`) becomes `#`.

use std::path::{Component, Path as FsPath, PathBuf};

use askama::Template;
use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, PathRejection, QueryRejection};
use axum::extract::{Path, Query, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use pulldown_cmark::{CowStr, Event, Options, Parser, Tag};

use super::pages::{blocking, error_page, PageError};
use super::{secure, View};

/// The largest report rendered (a study's report is a few hundred KB).
pub const MAX_REPORT_BYTES: usize = 4 << 20;
/// The largest study file served (a CSV of a long run is a few MB).
pub const MAX_FILE_BYTES: u64 = 64 << 20;
/// Where the served directory's files are.
pub const FILES: &str = "/explorer/study/files/";

/// Is `url` safe to keep, and as what: anchors and http(s) as they are, plain relative paths
/// under `base`; anything else is `None`.
fn rebase(url: &str, base: &str) -> Option<String> {
    if url.starts_with('#') || url.starts_with("https://") || url.starts_with("http://") {
        return Some(url.to_string());
    }
    let plain = !url.is_empty()
        && url.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b))
        && !url.starts_with('/')
        && url.split('/').all(|seg| !seg.is_empty() && seg != "." && seg != "..");
    plain.then(|| format!("{base}{url}"))
}

/// A report's Markdown as HTML (see the module's notes on what is kept).
pub fn render_markdown(md: &str, base: &str) -> String {
    let safe =
        |u: CowStr<'_>| -> CowStr<'static> { CowStr::from(rebase(&u, base).unwrap_or_else(|| "#".into())) };
    let events = Parser::new_ext(md, Options::ENABLE_TABLES).map(|e| match e {
        Event::Html(s) | Event::InlineHtml(s) => Event::Text(CowStr::from(s.into_string())),
        Event::Start(Tag::Link { link_type, dest_url, title, id }) => Event::Start(Tag::Link {
            link_type,
            dest_url: safe(dest_url),
            title: CowStr::from(title.into_string()),
            id: CowStr::from(id.into_string()),
        }),
        Event::Start(Tag::Image { link_type, dest_url, title, id }) => Event::Start(Tag::Image {
            link_type,
            dest_url: safe(dest_url),
            title: CowStr::from(title.into_string()),
            id: CowStr::from(id.into_string()),
        }),
        other => other.into_static(),
    });
    let mut out = String::with_capacity(md.len() * 2);
    pulldown_cmark::html::push_html(&mut out, events);
    out
}

/// `rel` (slash-separated, plain names only) under `root`, if it stays inside it.
fn inside(root: &FsPath, rel: &str) -> Option<PathBuf> {
    rebase(rel, "")?;
    let p = FsPath::new(rel);
    p.components().all(|c| matches!(c, Component::Normal(_))).then(|| root.join(p))
}

/// The subdirectories of `root` (one level) that hold a `report.md`, sorted.
fn sub_reports(root: &FsPath) -> Vec<String> {
    let mut out: Vec<String> = std::fs::read_dir(root)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter(|e| e.path().join("report.md").is_file())
                .filter_map(|e| e.file_name().to_str().map(str::to_string))
                .filter(|n| rebase(n, "").is_some())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[derive(Template)]
#[template(path = "study.html")]
struct StudyPage {
    title: String,
    nav: &'static str,
    /// The served directory, if the node has one.
    dir: Option<String>,
    /// The report shown (sanitised HTML), if any.
    report: Option<String>,
    /// Which report: `None` for the directory's own.
    sub: Option<String>,
    subs: Vec<String>,
}

/// `GET /explorer/study?sub=NAME`.
pub async fn page(
    State(node): State<View>,
    q: Result<Query<Vec<(String, String)>>, QueryRejection>,
) -> Response {
    let sub = q.ok().and_then(|Query(p)| p.into_iter().find(|(k, _)| k == "sub").map(|(_, v)| v));
    blocking(node, move |node| {
        let Some(root) = node.study_dir().map(FsPath::to_path_buf) else {
            return Ok(StudyPage {
                title: "Study".into(),
                nav: "study",
                dir: None,
                report: None,
                sub: None,
                subs: vec![],
            });
        };
        let dir = match &sub {
            None => root.clone(),
            Some(name) => inside(&root, name)
                .filter(|d| d.join("report.md").is_file())
                .ok_or_else(|| PageError::not_found(format!("no report {name:?} in the study directory")))?,
        };
        let path = dir.join("report.md");
        let report = match std::fs::metadata(&path) {
            Ok(m) if m.len() > MAX_REPORT_BYTES as u64 => {
                return Err(PageError::unavailable(format!(
                    "{}: over {MAX_REPORT_BYTES} bytes",
                    path.display()
                )))
            }
            Ok(_) => {
                let md = std::fs::read_to_string(&path)
                    .map_err(|e| PageError::unavailable(format!("{}: {e}", path.display())))?;
                let base = match &sub {
                    None => FILES.to_string(),
                    Some(n) => format!("{FILES}{n}/"),
                };
                Some(render_markdown(&md, &base))
            }
            Err(_) => None,
        };
        Ok(StudyPage {
            title: match &sub {
                None => "Study".into(),
                Some(n) => format!("Study: {n}"),
            },
            nav: "study",
            dir: Some(root.display().to_string()),
            report,
            subs: sub_reports(&root),
            sub,
        })
    })
    .await
}

/// `GET /explorer/study/files/{*path}`: a CSV, SVG or Markdown file of the served directory.
pub async fn file(State(node): State<View>, rel: Result<Path<String>, PathRejection>) -> Response {
    let not_found = || error_page(StatusCode::NOT_FOUND, "Not found", "no such study file".into());
    let (Some(root), Ok(Path(rel))) = (node.study_dir().map(FsPath::to_path_buf), rel) else {
        return not_found();
    };
    let kind = match rel.rsplit('.').next() {
        Some("svg") => "image/svg+xml",
        Some("csv") => "text/csv; charset=utf-8",
        Some("md") => "text/markdown; charset=utf-8",
        _ => return not_found(),
    };
    let Some(path) = inside(&root, &rel) else { return not_found() };
    match tokio::fs::metadata(&path).await {
        Ok(m) if m.is_file() && m.len() <= MAX_FILE_BYTES => {}
        Ok(m) if m.is_file() => {
            return error_page(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Too large",
                format!("{rel}: {} bytes; the explorer serves study files up to {MAX_FILE_BYTES}", m.len()),
            )
        }
        _ => return not_found(),
    }
    match tokio::fs::read(&path).await {
        Ok(body) => secure(([(header::CONTENT_TYPE, kind)], body).into_response()),
        Err(_) => not_found(),
    }
}

/// `POST /explorer/study/render`: Markdown in (at most [`MAX_REPORT_BYTES`]), sanitised HTML
/// out, its relative names kept as they are (the page maps them to the files the viewer
/// chose). Nothing is stored.
pub async fn render(body: Result<Bytes, BytesRejection>) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => {
            return error_page(StatusCode::BAD_REQUEST, "Bad request", format!("body: {}", e.body_text()))
        }
    };
    if body.len() > MAX_REPORT_BYTES {
        return error_page(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Too large",
            format!("a report of {} bytes; at most {MAX_REPORT_BYTES}", body.len()),
        );
    }
    let Ok(md) = std::str::from_utf8(&body) else {
        return error_page(StatusCode::BAD_REQUEST, "Bad request", "the report is not UTF-8".into());
    };
    let md = md.to_string();
    match tokio::task::spawn_blocking(move || render_markdown(&md, "")).await {
        Ok(html) => secure(([(header::CONTENT_TYPE, "text/html; charset=utf-8")], html).into_response()),
        Err(_) => error_page(StatusCode::SERVICE_UNAVAILABLE, "Unavailable", "the node is stopping".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_html_is_text_and_unsafe_links_go() {
        let md = "# T\n\n<script>alert(1)</script>\n\nx <b onclick=\"f()\">y</b>\n\n\
                  [a](javascript:alert(1)) [b](../../etc/passwd) [c](/abs) [d](data.csv) [e](#s) \
                  [f](https://example.org/x)\n\n![fig](fig.svg)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n";
        let html = render_markdown(md, "/explorer/study/files/");
        assert!(!html.contains("<script>") && html.contains("&lt;script&gt;"), "{html}");
        assert!(!html.contains("<b onclick"), "{html}");
        assert!(
            !html.contains("javascript:") && !html.contains("passwd") && !html.contains("\"/abs\""),
            "{html}"
        );
        assert!(html.contains("href=\"/explorer/study/files/data.csv\""), "{html}");
        assert!(html.contains("href=\"#s\"") && html.contains("href=\"https://example.org/x\""), "{html}");
        assert!(html.contains("<img src=\"/explorer/study/files/fig.svg\""), "{html}");
        assert!(html.contains("<table>") && html.contains("<td>2</td>"), "{html}");
    }

    #[test]
    fn files_stay_inside_the_directory() {
        let root = FsPath::new("/srv/study");
        assert_eq!(inside(root, "big/report.md"), Some(PathBuf::from("/srv/study/big/report.md")));
        for bad in ["../x.svg", "/etc/passwd", "a/../../b.csv", "a//b.csv", "", "a\\b.svg", "%2e%2e/x.md"] {
            assert_eq!(inside(root, bad), None, "{bad}");
        }
    }
}
