//! Deferral modes, the whitelist, announcements, prefetch.

use std::sync::Arc;

use insta::assert_snapshot;
use tool_core::{AnyTool, Loading, Origin, ToolSpec};
use tool_pool::{DeferralMode, PoolConfig, TokenCounter};

use super::support::{Fixture, Stub, mcp, schema};

fn auto(percent: u8, context_window: usize) -> PoolConfig {
    PoolConfig {
        mode: DeferralMode::Auto { percent },
        context_window,
        ..PoolConfig::default()
    }
}

#[test]
fn always_defers_every_mcp_tool_and_keeps_the_search_tools() {
    let fx = Fixture::new(PoolConfig::default());
    assert_eq!(fx.pool.deferred_names().len(), 5);
    let names = fx.pool.request_tools().names();
    assert!(
        names.contains(&"tool_search".to_owned()) && names.contains(&"execute_tool".to_owned())
    );
    assert!(!names.iter().any(|n| n.starts_with("mcp__")));
}

#[test]
fn standard_defers_nothing_and_drops_the_search_tools() {
    let fx = Fixture::new(PoolConfig {
        mode: DeferralMode::Standard,
        ..PoolConfig::default()
    });
    assert!(fx.pool.deferred_names().is_empty());
    let names = fx.pool.request_tools().names();
    assert!(!names.contains(&"tool_search".to_owned()));
    assert_eq!(names.len(), 11);
}

#[test]
fn auto_defers_just_over_the_threshold_and_not_at_it() {
    let probe = Fixture::new(auto(10, 1_000_000));
    let tokens = probe.pool.deferrable_tokens();
    assert!(tokens > 0);
    // At exactly 10% of the window the schemas fit: nothing is deferred.
    let at = Fixture::new(auto(10, tokens * 10));
    assert!(!at.pool.deferral_active());
    assert!(at.pool.deferred_names().is_empty());
    // One token less of window puts them over: deferred.
    let over = Fixture::new(auto(10, tokens * 10 - 1));
    assert!(over.pool.deferral_active());
    assert_eq!(over.pool.deferred_names().len(), 5);
    // The percentage is honoured too.
    assert!(!Fixture::new(auto(20, tokens * 5)).pool.deferral_active());
    assert!(
        Fixture::new(auto(20, tokens * 5 - 1))
            .pool
            .deferral_active()
    );
}

struct Fixed(Option<usize>);

impl TokenCounter for Fixed {
    fn count_tokens(&self, _: &str) -> Option<usize> {
        self.0
    }
}

#[test]
fn auto_uses_the_token_counter_and_falls_back_to_the_estimate() {
    let fx = Fixture::new(auto(10, 1_000));
    let estimate = fx.pool.deferrable_tokens();
    fx.pool.set_token_counter(Arc::new(Fixed(Some(1))));
    assert_eq!(
        fx.pool.deferrable_tokens(),
        5,
        "one token per deferrable tool"
    );
    assert!(!fx.pool.deferral_active());
    fx.pool.set_token_counter(Arc::new(Fixed(None)));
    assert_eq!(fx.pool.deferrable_tokens(), estimate);
}

#[test]
fn always_load_and_the_whitelist_opt_out() {
    let fx = Fixture::new(PoolConfig::default());
    let pinned: AnyTool = AnyTool::new(Stub {
        spec: ToolSpec::new(
            "mcp__docs__search",
            "Search the docs.",
            schema(&[("q", "query")]),
        )
        .with_loading(Loading::AlwaysLoad)
        .with_origin(Origin::Mcp {
            server: "docs".into(),
            tool: "search".into(),
        }),
    });
    fx.pool.add_mcp_tool(pinned).unwrap();
    let plan: AnyTool = AnyTool::new(Stub {
        spec: ToolSpec::new("enter_plan_mode", "Enter plan mode.", schema(&[]))
            .with_loading(Loading::Defer),
    });
    fx.registry.register(plan).unwrap();
    fx.pool.sync();
    let names = fx.pool.request_tools().names();
    assert!(names.contains(&"mcp__docs__search".to_owned()));
    assert_eq!(
        names.last().map(String::as_str),
        Some("mcp__docs__search"),
        "MCP tools come after built-ins"
    );
    assert!(fx.pool.is_deferred("enter_plan_mode"));
    assert!(!fx.pool.is_deferred("tool_search"));
}

#[test]
fn the_announcement_never_changes_and_deltas_follow_servers() {
    let fx = Fixture::new(PoolConfig::default());
    let first = fx.pool.announcement().unwrap();
    assert_snapshot!("announcement", first);
    assert!(fx.pool.take_deltas().is_empty());
    fx.pool
        .add_mcp_tool(mcp(
            "jira",
            "create_ticket",
            "Create a Jira ticket.",
            &[("summary", "Summary")],
        ))
        .unwrap();
    assert_eq!(fx.pool.remove_server("slack"), 2);
    assert_eq!(
        fx.pool.announcement().unwrap(),
        first,
        "the system prompt's text stays the same"
    );
    let deltas = fx.pool.take_deltas();
    assert_snapshot!("deltas", deltas.join("\n---\n"));
    assert!(fx.pool.take_deltas().is_empty());
}

#[tokio::test]
async fn prefetch_suggests_up_to_three_new_tools_but_not_on_the_first_message() {
    let fx = Fixture::new(PoolConfig::default());
    let text =
        "please open a github issue about the failing merge of the pull request and tell slack";
    assert!(fx.pool.prefetch(text, true).is_empty());
    assert!(fx.pool.discovered().is_empty());
    let first = fx.pool.prefetch(text, false);
    assert!(!first.is_empty() && first.len() <= 3, "{first:?}");
    assert!(first.iter().all(|n| fx.pool.is_discovered(n)));
    let second = fx.pool.prefetch(text, false);
    assert!(
        second.iter().all(|n| !first.contains(n)),
        "already discovered tools are not suggested again"
    );
}

#[test]
fn tools_that_leave_are_forgotten() {
    let fx = Fixture::new(PoolConfig::default());
    fx.pool.discover(&["mcp__slack__send_message"]);
    fx.pool.remove_server("slack");
    assert!(!fx.pool.is_discovered("mcp__slack__send_message"));
}

/// Past its budget, the announcement is a line per server, whatever the number of tools, with
/// the server's own note; a server of a thousand tools connecting later is one line of delta too.
#[test]
fn the_announcement_past_its_budget_is_a_line_per_server() {
    let config = PoolConfig {
        announcement_budget: Some(2_000),
        ..PoolConfig::default()
    };
    let small = Fixture::new(config.clone());
    let within = small.pool.announcement().unwrap();
    assert!(within.contains("mcp__slack__send_message"), "{within}");

    let fx = Fixture::new(config);
    fx.pool.set_server_note(
        "crm",
        "Customer records: accounts, contacts and deals.\nUse search_accounts first.",
    );
    for i in 0..1_000 {
        fx.pool
            .add_mcp_tool(mcp(
                "crm",
                &format!("operation_{i:04}"),
                "One operation.",
                &[("id", "Id")],
            ))
            .unwrap();
    }
    let first = fx.pool.announcement().unwrap();
    assert!(first.len() < 2_400, "{} bytes", first.len());
    assert_snapshot!("announcement_past_budget", first);

    for i in 0..1_000 {
        fx.pool
            .add_mcp_tool(mcp("erp", &format!("call_{i:04}"), "One call.", &[]))
            .unwrap();
    }
    fx.pool.sync();
    let deltas = fx.pool.take_deltas();
    assert_eq!(
        deltas,
        [
            "<deferred-tools-delta>\nNow available (deferred): mcp__erp (1000 tools)\n</deferred-tools-delta>"
        ]
    );
    assert_eq!(fx.pool.announcement().unwrap(), first);
}
