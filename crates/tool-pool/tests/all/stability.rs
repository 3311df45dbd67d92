//! The byte-stability properties the prompt cache depends on.

use std::sync::Arc;

use proptest::prelude::*;
use tool_core::{AnyTool, ToolRegistry};
use tool_pool::{Activation, DeferralMode, PoolConfig, ToolPool};

use super::support::{builtin, mcp};

/// A universe of tools to draw from: ten built-ins and four servers of three tools.
type Tools = Vec<AnyTool>;

fn universe() -> (Tools, Tools) {
    let builtins = [
        "read_file",
        "write_file",
        "edit_file",
        "glob",
        "grep",
        "shell",
        "web_fetch",
        "todo_write",
        "notebook",
        "enter_plan_mode",
    ]
    .iter()
    .map(|n| builtin(n, &format!("The {n} tool.")))
    .collect();
    let mut tools = Vec::new();
    for server in ["github", "slack", "jira", "files"] {
        for tool in ["create", "list", "delete"] {
            tools.push(mcp(
                server,
                tool,
                &format!("{tool} things on {server}"),
                &[("id", "The id")],
            ));
        }
    }
    (builtins, tools)
}

fn pool_with(config: &PoolConfig, builtins: &[AnyTool], mcp_tools: &[AnyTool]) -> ToolPool {
    let registry = Arc::new(ToolRegistry::new());
    for tool in builtins {
        registry.register(tool.clone()).unwrap();
    }
    let pool = ToolPool::new(registry, config.clone()).unwrap();
    for tool in mcp_tools {
        pool.add_mcp_tool(tool.clone()).unwrap();
    }
    pool
}

/// The serialised request tools: every declaration's name, description and schema, in order,
/// and where the stable part ends; everything a provider renders the tools array from.
fn bytes(pool: &ToolPool) -> String {
    serde_json::to_string(&pool.request_tools()).unwrap()
}

fn configs() -> impl Strategy<Value = PoolConfig> {
    (
        prop_oneof![
            Just(DeferralMode::Always),
            Just(DeferralMode::Standard),
            Just(DeferralMode::Auto { percent: 10 })
        ],
        prop_oneof![Just(Activation::Proxy), Just(Activation::Inline)],
    )
        .prop_map(|(mode, activation)| PoolConfig {
            mode,
            activation,
            context_window: 2_000,
            ..PoolConfig::default()
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_same_tools_in_any_order_give_the_same_bytes(
        config in configs(),
        picks in proptest::collection::vec(any::<bool>(), 22),
        seed in any::<u64>(),
    ) {
        let (all_builtins, all_mcp) = universe();
        let builtins: Vec<_> = all_builtins.iter().zip(&picks).filter(|(_, p)| **p).map(|(t, _)| t.clone()).collect();
        let mcp_tools: Vec<_> = all_mcp.iter().zip(&picks[10..]).filter(|(_, p)| **p).map(|(t, _)| t.clone()).collect();
        let mut shuffled_b = builtins.clone();
        let mut shuffled_m = mcp_tools.clone();
        shuffle(&mut shuffled_b, seed);
        shuffle(&mut shuffled_m, seed.rotate_left(17));
        let a = pool_with(&config, &builtins, &mcp_tools);
        let b = pool_with(&config, &shuffled_b, &shuffled_m);
        prop_assert_eq!(bytes(&a), bytes(&b));
    }

    #[test]
    fn servers_coming_and_going_leave_the_builtin_part_alone(
        config in configs(),
        server_index in 0usize..4,
    ) {
        let (builtins, mcp_tools) = universe();
        let pool = pool_with(&config, &builtins, &mcp_tools);
        let builtin_count = pool.request_tools().tools.iter().filter(|t| t.spec().origin == tool_core::Origin::BuiltIn).count();
        let before = pool.request_tools();
        let server = ["github", "slack", "jira", "files"][server_index];
        pool.remove_server(server);
        let after_remove = pool.request_tools();
        for tool in mcp_tools.iter().filter(|t| t.spec().name.starts_with(&format!("mcp__{server}__"))) {
            pool.add_mcp_tool(tool.clone()).unwrap();
        }
        let after_return = pool.request_tools();
        // The built-in part keeps its bytes; only the end of the stable part may move onto its
        // last tool when every MCP tool goes.
        let json = |tools: &tool_pool::RequestTools, i: usize| serde_json::to_string(&tools.declarations()[i]).unwrap();
        for i in 0..builtin_count {
            prop_assert_eq!(json(&before, i), json(&after_remove, i));
        }
        let (before, after_return) = (serde_json::to_string(&before).unwrap(), serde_json::to_string(&after_return).unwrap());
        prop_assert_eq!(before, after_return);
    }

    #[test]
    fn always_defer_with_the_proxy_keeps_the_whole_array(
        server_index in 0usize..4,
        keep in proptest::collection::vec(any::<bool>(), 12),
    ) {
        let config = PoolConfig { mode: DeferralMode::Always, activation: Activation::Proxy, ..PoolConfig::default() };
        let (builtins, mcp_tools) = universe();
        let pool = pool_with(&config, &builtins, &mcp_tools[..3]);
        let before = bytes(&pool);
        for (tool, k) in mcp_tools.iter().zip(&keep) {
            if *k { pool.add_mcp_tool(tool.clone()).unwrap(); }
        }
        prop_assert_eq!(&bytes(&pool), &before);
        pool.remove_server(["github", "slack", "jira", "files"][server_index]);
        prop_assert_eq!(&bytes(&pool), &before);
        pool.discover(&["mcp__jira__create"]);
        prop_assert_eq!(&bytes(&pool), &before);
    }
}

/// A deterministic Fisher-Yates shuffle (splitmix64), so failures reproduce from the seed.
fn shuffle<T>(items: &mut [T], seed: u64) {
    let mut state = seed;
    for i in (1..items.len()).rev() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        let j = (z % (i as u64 + 1)) as usize;
        items.swap(i, j);
    }
}
