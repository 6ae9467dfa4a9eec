//! The explorer follows the API's token rule: when the API has a token (`api.token`, or the one
//! generated when it listens beyond loopback), every explorer answer needs it too — as
//! `Authorization: Bearer <token>`, or as the `scalechain_token` cookie that a visit with
//! `?token=<token>` (the form on the explorer's 401 page) sets (HttpOnly, SameSite=Strict,
//! path `/explorer`) before leading to the same page without it.

use askama::Template;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Redirect, Response};

use super::{secure, View};

/// The cookie that carries the token.
pub const COOKIE: &str = "scalechain_token";

#[derive(Template)]
#[template(path = "token.html")]
struct TokenPage {
    title: String,
    nav: &'static str,
    action: String,
    wrong: bool,
}

fn given<'a>(headers: &'a HeaderMap) -> impl Iterator<Item = &'a str> + 'a {
    let cookies = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(COOKIE).and_then(|r| r.strip_prefix('=')));
    bearer(headers).into_iter().chain(cookies)
}

/// The token of an `Authorization: Bearer <token>` header, if there is one (as the API reads
/// it).
fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()).and_then(|v| v.strip_prefix("Bearer "))
}

/// The query's `token`, if any (percent-decoded).
fn query_token(uri: &axum::http::Uri) -> Option<String> {
    let axum::extract::Query(pairs) =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri).ok()?;
    pairs.into_iter().find(|(k, _)| k == "token").map(|(_, v)| v)
}

/// The middleware.
pub async fn check(State(view): State<View>, req: Request, next: Next) -> Response {
    if !view.token_required() {
        return next.run(req).await;
    }
    let ok = |t: &str| view.token_matches(t);
    if given(req.headers()).any(ok) {
        return next.run(req).await;
    }
    let path = req.uri().path().to_string();
    let offered = query_token(req.uri());
    if let Some(token) = offered.as_deref().filter(|t| ok(t)) {
        // Back to the page asked for, its other parameters kept.
        let rest: Vec<(String, String)> =
            axum::extract::Query::<Vec<(String, String)>>::try_from_uri(req.uri())
                .map(|axum::extract::Query(p)| p.into_iter().filter(|(k, _)| k != "token").collect())
                .unwrap_or_default();
        let to = match serde_urlencoded::to_string(&rest) {
            Ok(q) if !q.is_empty() => format!("{path}?{q}"),
            _ => path.clone(),
        };
        let mut r = Redirect::to(&to).into_response();
        let cookie = format!("{COOKIE}={token}; Path=/explorer; HttpOnly; SameSite=Strict");
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        return secure(r);
    }
    let page = TokenPage {
        title: "Token needed".into(),
        nav: "",
        action: if path.starts_with("/explorer") { path } else { "/explorer".into() },
        wrong: offered.is_some(),
    };
    match page.render() {
        Ok(body) => secure((StatusCode::UNAUTHORIZED, Html(body)).into_response()),
        Err(_) => {
            secure((StatusCode::UNAUTHORIZED, "this explorer needs the node's API token").into_response())
        }
    }
}
