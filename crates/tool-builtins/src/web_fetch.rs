//! web_fetch: GET a URL and return readable text, with limits on time, redirects and size, and a
//! refusal of private, loopback and link-local targets (checked on every hop and after DNS).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use ipnet::{Ipv4Net, Ipv6Net};
use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use reqwest::{Response, StatusCode};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use tool_core::{CallInfo, PermissionCheck, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use url::{Host, Url};

use crate::text::{cap_output, looks_binary};

/// How web_fetch fetches.
#[derive(Debug, Clone)]
pub struct WebFetchConfig {
    /// Allow private, loopback, link-local and other non-public addresses.
    pub allow_private: bool,
    /// Hosts (names or IP literals, exactly as in URLs) allowed even when private, such as an
    /// intranet documentation server.
    pub allowed_private_hosts: Vec<String>,
    /// The whole request's time limit, body included.
    pub timeout: Duration,
    /// Redirects followed at most.
    pub max_redirects: usize,
    /// Bytes of body read at most; reading stops there (the cap is enforced while streaming).
    pub max_download_bytes: usize,
    /// Characters of text returned at most (after HTML conversion).
    pub max_text_chars: usize,
    /// The User-Agent header.
    pub user_agent: String,
}

impl Default for WebFetchConfig {
    fn default() -> Self {
        Self {
            allow_private: false,
            allowed_private_hosts: Vec::new(),
            timeout: Duration::from_secs(30),
            max_redirects: 5,
            max_download_bytes: 2 * 1024 * 1024,
            max_text_chars: 50_000,
            user_agent: concat!("tool-builtins/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// The web_fetch tool.
pub(crate) struct WebFetch {
    config: Arc<WebFetchConfig>,
    client: Result<reqwest::Client, String>,
}

impl WebFetch {
    /// A web_fetch tool with this configuration.
    pub(crate) fn new(config: WebFetchConfig) -> Self {
        tool_core::net::install_crypto_provider();
        let config = Arc::new(config);
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            // A proxy would resolve names itself, out of the resolver's sight.
            .no_proxy()
            .timeout(config.timeout)
            .connect_timeout(config.timeout)
            .user_agent(config.user_agent.clone())
            .dns_resolver(Arc::new(GuardedResolver {
                config: Arc::clone(&config),
            }))
            .build()
            .map_err(|err| err.to_string());
        Self { config, client }
    }
}

/// web_fetch's input.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct WebFetchInput {
    /// The http or https URL to fetch.
    pub url: String,
}

#[async_trait]
impl Tool for WebFetch {
    type Input = WebFetchInput;

    fn spec(&self, input_schema: Value) -> ToolSpec {
        ToolSpec::new(
            "web_fetch",
            "Fetches a URL with GET and returns its content as text: HTML converted to readable text (scripts and styles dropped), JSON and plain text as they are. Binary content is refused. Large pages are cut. Private and local network addresses are refused unless the user allowed them.",
            input_schema,
        )
        .with_search_hint("fetch web page url http download")
    }

    fn info(&self, input: &WebFetchInput) -> CallInfo {
        let domain = parse_url(&input.url)
            .ok()
            .and_then(|u| u.host_str().map(|h| format!("domain:{h}")));
        CallInfo::reads()
            .with_concurrency_safe(true)
            .with_subject(domain)
            .with_activity(Some(format!("Fetching {}", input.url)))
    }

    async fn validate_input(
        &self,
        input: &WebFetchInput,
        _: &ToolContext,
    ) -> Result<(), ToolError> {
        parse_url(&input.url).map(|_| ())
    }

    async fn check_permissions(&self, input: &WebFetchInput, _: &ToolContext) -> PermissionCheck {
        match parse_url(&input.url).and_then(|url| check_host(&url, &self.config)) {
            Ok(()) => PermissionCheck::Ask {
                reason: format!("web_fetch wants to fetch {}", input.url),
            },
            Err(err) => PermissionCheck::Deny {
                reason: err.to_string(),
            },
        }
    }

    async fn call(&self, input: WebFetchInput, ctx: &ToolContext) -> Result<ToolOutput, ToolError> {
        let client = self.client.as_ref().map_err(|err| {
            ToolError::failed(format!("the HTTP client could not be set up: {err}"))
        })?;
        let fetch = fetch(client, &self.config, &input.url);
        tokio::select! {
            result = fetch => result,
            () = ctx.cancellation().cancelled() => Err(ToolError::Cancelled),
        }
    }
}

fn parse_url(text: &str) -> Result<Url, ToolError> {
    let url = Url::parse(text.trim()).map_err(|err| {
        ToolError::invalid(format!(
            "`{text}` is not a valid URL ({err}); pass a full URL such as \"https://example.com/page\""
        ))
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(ToolError::invalid(format!(
            "only http and https URLs can be fetched, not {}:",
            url.scheme()
        )));
    }
    if url.host().is_none() {
        return Err(ToolError::invalid(format!("`{text}` has no host")));
    }
    Ok(url)
}

fn host_allowed(host: &str, config: &WebFetchConfig) -> bool {
    config.allow_private
        || config
            .allowed_private_hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(host))
}

/// Refuses a URL whose host is a non-public IP literal or a `localhost` name (other names are
/// checked by the resolver, after DNS).
fn check_host(url: &Url, config: &WebFetchConfig) -> Result<(), ToolError> {
    let (Some(host), Some(shown)) = (url.host(), url.host_str()) else {
        return Err(ToolError::invalid(format!("{url} has no host")));
    };
    if host_allowed(shown, config) {
        return Ok(());
    }
    // The URL parser has already read every IPv4 spelling (decimal, hex, short forms) and every
    // bracketed IPv6 form into an address, so a literal can never pass as a name.
    let private = match host {
        Host::Ipv4(ip) => !is_public(IpAddr::V4(ip)),
        Host::Ipv6(ip) => !is_public(IpAddr::V6(ip)),
        Host::Domain(name) => tool_core::net::is_localhost(name),
    };
    if private {
        return Err(refused(shown));
    }
    Ok(())
}

fn refused(host: &str) -> ToolError {
    ToolError::failed(format!(
        "refused to fetch from {host}: it is a private, loopback or link-local address, which web_fetch does not reach unless the user allows it; fetch a public URL instead"
    ))
}

/// Whether an address is publicly routable: not private, loopback, link-local, unique-local,
/// CGNAT, multicast, documentation, benchmarking, reserved or unspecified.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_public_v4(v4),
        IpAddr::V6(v6) => is_public_v6(v6),
    }
}

/// The IPv4 networks that are not publicly routable.
const NON_PUBLIC_V4: [Ipv4Net; 14] = [
    v4([0, 0, 0, 0], 8),       // "this network", the unspecified address among them
    v4([10, 0, 0, 0], 8),      // private
    v4([100, 64, 0, 0], 10),   // CGNAT
    v4([127, 0, 0, 0], 8),     // loopback
    v4([169, 254, 0, 0], 16),  // link-local
    v4([172, 16, 0, 0], 12),   // private
    v4([192, 0, 0, 0], 24),    // IETF protocol assignments
    v4([192, 0, 2, 0], 24),    // documentation (TEST-NET-1)
    v4([192, 168, 0, 0], 16),  // private
    v4([198, 18, 0, 0], 15),   // benchmarking
    v4([198, 51, 100, 0], 24), // documentation (TEST-NET-2)
    v4([203, 0, 113, 0], 24),  // documentation (TEST-NET-3)
    v4([224, 0, 0, 0], 4),     // multicast
    v4([240, 0, 0, 0], 4),     // reserved, the broadcast address among them
];

/// The IPv6 networks that are not publicly routable (IPv4-mapped and NAT64 addresses are
/// judged by the IPv4 address they hold).
const NON_PUBLIC_V6: [Ipv6Net; 7] = [
    v6([0, 0, 0, 0, 0, 0, 0, 0], 96), // IPv4-compatible (deprecated), :: and ::1 among them
    v6([0, 0, 0, 0, 0, 0, 0, 1], 128), // loopback
    v6([0xfc00, 0, 0, 0, 0, 0, 0, 0], 7), // unique local
    v6([0xfe80, 0, 0, 0, 0, 0, 0, 0], 10), // link-local
    v6([0xfec0, 0, 0, 0, 0, 0, 0, 0], 10), // site-local (deprecated)
    v6([0xff00, 0, 0, 0, 0, 0, 0, 0], 8), // multicast
    v6([0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32), // documentation
];

/// NAT64 (64:ff9b::/96), whose addresses embed an IPv4 address.
const NAT64: Ipv6Net = v6([0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96);

const fn v4([a, b, c, d]: [u8; 4], prefix: u8) -> Ipv4Net {
    Ipv4Net::new_assert(Ipv4Addr::new(a, b, c, d), prefix)
}

const fn v6([a, b, c, d, e, f, g, h]: [u16; 8], prefix: u8) -> Ipv6Net {
    Ipv6Net::new_assert(Ipv6Addr::new(a, b, c, d, e, f, g, h), prefix)
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    !NON_PUBLIC_V4.iter().any(|net| net.contains(&ip))
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return is_public_v4(v4);
    }
    if NAT64.contains(&ip) {
        let [.., a, b, c, d] = ip.octets();
        return is_public_v4(Ipv4Addr::new(a, b, c, d));
    }
    !NON_PUBLIC_V6.iter().any(|net| net.contains(&ip))
}

/// A resolver that drops non-public addresses, so a public-looking name that resolves to an
/// internal address (or rebinding DNS) cannot reach the internal network.
struct GuardedResolver {
    config: Arc<WebFetchConfig>,
}

/// The error the resolver gives when a name resolves only to refused addresses.
#[derive(Debug, thiserror::Error)]
#[error("{host} resolves only to private, loopback or link-local addresses")]
struct BlockedHost {
    host: String,
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let host = name.as_str().to_owned();
        let allow = host_allowed(&host, &self.config);
        Box::pin(async move {
            let addrs: Vec<SocketAddr> =
                tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let kept: Vec<SocketAddr> = addrs
                .into_iter()
                .filter(|a| allow || is_public(a.ip()))
                .collect();
            if kept.is_empty() {
                return Err(
                    Box::new(BlockedHost { host }) as Box<dyn std::error::Error + Send + Sync>
                );
            }
            Ok(Box::new(kept.into_iter()) as Addrs)
        })
    }
}

async fn fetch(
    client: &reqwest::Client,
    config: &WebFetchConfig,
    url: &str,
) -> Result<ToolOutput, ToolError> {
    let (url, response) = follow_redirects(client, config, parse_url(url)?).await?;
    let status = response.status();
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    let kind = classify(&content_type);
    let failed = status.is_client_error() || status.is_server_error();
    if kind == Kind::Binary && !failed {
        return Err(ToolError::failed(format!(
            "{url} is binary content ({content_type}); web_fetch returns text, HTML and JSON only. Download it with the shell tool if you need the file"
        )));
    }
    let (body, cut) = read_capped(response, config, &url).await?;
    if failed {
        return Err(status_error(&url, status, &body));
    }
    if kind == Kind::Unknown && looks_binary(&body) {
        return Err(ToolError::failed(format!(
            "{url} is binary content (no text content type); web_fetch returns text, HTML and JSON only"
        )));
    }
    let text = readable_text(kind, &body, cut, config);
    let shown_type = if content_type.is_empty() {
        "unknown"
    } else {
        content_type.as_str()
    };
    Ok(ToolOutput::text(cap_output(&format!(
        "URL: {url}\nStatus: {}\nContent-Type: {shown_type}\n\n{}",
        status_text(status),
        text.trim()
    ))))
}

/// Sends the GET and follows redirects by hand, so that every hop's host is checked before it
/// is contacted; returns the final URL and its response.
async fn follow_redirects(
    client: &reqwest::Client,
    config: &WebFetchConfig,
    mut url: Url,
) -> Result<(Url, Response), ToolError> {
    let mut redirects = 0;
    loop {
        check_host(&url, config)?;
        let response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|err| request_error(&url, &err, config))?;
        let Some(location) = redirect_location(&response) else {
            return Ok((url, response));
        };
        redirects += 1;
        if redirects > config.max_redirects {
            return Err(ToolError::failed(format!(
                "{url} redirected more than {} times; the site may be in a redirect loop, so try a different URL",
                config.max_redirects
            )));
        }
        url = redirect_target(&url, &location)?;
    }
}

/// The `Location` of a redirect response, if it is one and names a location.
fn redirect_location(response: &Response) -> Option<String> {
    if !response.status().is_redirection() {
        return None;
    }
    let location = response.headers().get(reqwest::header::LOCATION)?;
    location.to_str().ok().map(str::to_owned)
}

/// Where a redirect from `url` to `location` leads; only http and https are followed.
fn redirect_target(url: &Url, location: &str) -> Result<Url, ToolError> {
    let next = url.join(location).map_err(|err| {
        ToolError::failed(format!(
            "{url} redirected to an invalid location `{location}`: {err}"
        ))
    })?;
    if !matches!(next.scheme(), "http" | "https") {
        return Err(ToolError::failed(format!(
            "{url} redirected to {next}, which is not http or https"
        )));
    }
    Ok(next)
}

/// The error for a 4xx or 5xx answer, with a hint and the start of the body.
fn status_error(url: &Url, status: StatusCode, body: &[u8]) -> ToolError {
    let excerpt: String = String::from_utf8_lossy(body).chars().take(500).collect();
    let hint = if status.is_client_error() {
        "check the URL; the page may not exist or may need authentication"
    } else {
        "the server failed; try again later or use another source"
    };
    let excerpt = if excerpt.trim().is_empty() {
        String::new()
    } else {
        format!("\nResponse body (start):\n{}", excerpt.trim())
    };
    ToolError::failed(format!(
        "{url} answered HTTP {}: {hint}.{excerpt}",
        status_text(status)
    ))
}

/// The body as text within the configured size: HTML converted, anything else as it is, and a
/// note when the download was cut.
fn readable_text(kind: Kind, body: &[u8], cut: bool, config: &WebFetchConfig) -> String {
    let text = match kind {
        Kind::Html => html_to_text(body),
        _ => String::from_utf8_lossy(body).into_owned(),
    };
    let mut text = if text.chars().count() > config.max_text_chars {
        tool_core::truncate_middle(&text, config.max_text_chars)
    } else {
        text
    };
    if cut {
        text.push_str(&format!(
            "\n[... the response was cut at {} bytes; the rest was not downloaded ...]",
            config.max_download_bytes
        ));
    }
    text
}

fn status_text(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

/// Reads the body up to the cap, stopping (and dropping the connection) there.
async fn read_capped(
    mut response: Response,
    config: &WebFetchConfig,
    url: &Url,
) -> Result<(Vec<u8>, bool), ToolError> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|err| request_error(url, &err, config))?
    {
        let room = config.max_download_bytes - body.len();
        if chunk.len() >= room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

fn request_error(url: &Url, err: &reqwest::Error, config: &WebFetchConfig) -> ToolError {
    let mut source: Option<&dyn std::error::Error> = Some(err);
    while let Some(e) = source {
        if let Some(blocked) = e.downcast_ref::<BlockedHost>() {
            return refused(&blocked.host);
        }
        source = e.source();
    }
    if err.is_timeout() {
        return ToolError::failed(format!(
            "fetching {url} timed out after {} s; the server is slow or unreachable, try again later or another source",
            config.timeout.as_secs_f64()
        ));
    }
    if err.is_connect() {
        return ToolError::failed(format!(
            "could not connect to {url}: {}; check the host name, or try again later",
            tool_core::net::error_chain(err)
        ));
    }
    ToolError::failed(format!(
        "fetching {url} failed: {}",
        tool_core::net::error_chain(err)
    ))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Html,
    Text,
    Binary,
    Unknown,
}

fn classify(content_type: &str) -> Kind {
    let mime = content_type.split(';').next().unwrap_or("").trim();
    if mime.is_empty() {
        return Kind::Unknown;
    }
    if mime == "text/html" || mime == "application/xhtml+xml" {
        return Kind::Html;
    }
    let textual = mime.starts_with("text/")
        || mime.ends_with("+json")
        || mime.ends_with("+xml")
        || matches!(
            mime,
            "application/json"
                | "application/xml"
                | "application/javascript"
                | "application/ecmascript"
                | "application/x-javascript"
                | "application/x-ndjson"
                | "application/yaml"
                | "application/x-yaml"
                | "application/toml"
                | "application/x-sh"
                | "application/sql"
                | "application/graphql"
        );
    if textual { Kind::Text } else { Kind::Binary }
}

/// HTML to readable text; scripts, styles and other non-content elements are dropped.
fn html_to_text(html: &[u8]) -> String {
    match html2text::from_read(html, 100) {
        Ok(text) => text,
        Err(_) => String::from_utf8_lossy(html).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn address_classes() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fd00::1",
            "ff02::1",
            "::ffff:127.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "64:ff9b::808:808",
        ] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[test]
    fn literal_hosts_are_checked() {
        let config = WebFetchConfig::default();
        for url in [
            "http://127.0.0.1/",
            "http://[::1]:8080/",
            "http://2130706433/",
            "http://0x7f.1/",
            "http://localhost/",
            "http://169.254.169.254/latest/meta-data",
        ] {
            let url = parse_url(url).unwrap();
            assert!(check_host(&url, &config).is_err(), "{url}");
        }
        assert!(check_host(&parse_url("https://example.com/").unwrap(), &config).is_ok());
    }

    #[tokio::test]
    async fn the_resolver_drops_private_addresses() {
        let guarded = GuardedResolver {
            config: Arc::new(WebFetchConfig::default()),
        };
        let name: Name = "localhost".parse().unwrap();
        let err = guarded.resolve(name).await.err().unwrap();
        assert!(
            err.to_string().contains("resolves only to private"),
            "{err}"
        );
        let open = GuardedResolver {
            config: Arc::new(WebFetchConfig {
                allow_private: true,
                ..WebFetchConfig::default()
            }),
        };
        let addrs: Vec<SocketAddr> = open
            .resolve("localhost".parse().unwrap())
            .await
            .unwrap()
            .collect();
        assert!(addrs.iter().all(|a| a.ip().is_loopback()) && !addrs.is_empty());
    }

    #[test]
    fn content_types() {
        assert_eq!(classify("text/html; charset=utf-8"), Kind::Html);
        assert_eq!(classify("application/json"), Kind::Text);
        assert_eq!(classify("application/vnd.api+json"), Kind::Text);
        assert_eq!(classify("image/png"), Kind::Binary);
        assert_eq!(classify("application/octet-stream"), Kind::Binary);
        assert_eq!(classify(""), Kind::Unknown);
    }
}
