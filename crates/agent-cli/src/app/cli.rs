//! The command-line grammar (clap): the flags of a run and the subcommands.

use super::*;

/// A coding agent in the terminal.
///
/// With no arguments it starts an interactive session; `-p "task"` runs one task and prints the
/// answer. It talks to Anthropic's Messages API when ANTHROPIC_API_KEY is set, to an
/// OpenAI-compatible API when OPENAI_API_KEY or OPENAI_BASE_URL is set, and otherwise to a local
/// OpenAI-compatible server at http://localhost:11434/v1 (Ollama's default).
///
/// Settings are read from ~/.config/agent-cli/settings.json (or $AGENT_CLI_HOME/settings.json) and
/// ./.agent-cli/settings.json (permissions, hooks, MCP servers, deferral, provider and model);
/// flags override them. MCP servers also come from ./.mcp.json. What a folder's own files would
/// widen (permission mode, allow rules, hooks, MCP servers that run commands, send headers or fill
/// in ${VAR}s, skills' allowed tools) applies only once you trust the folder (`agent-cli trust`);
/// deny and ask rules always apply.
/// AGENTS.md and CLAUDE.md from the repository root down (and ~/.config/agent-cli/AGENTS.md) go
/// into the system prompt. Sessions are saved as they happen under ~/.config/agent-cli/sessions
/// and compacted when they near the context window; `--continue` picks up the latest one in this
/// directory. In a session, /help lists the commands.
///
/// Examples:
///   agent-cli -p "explain src/main.rs"
///   ANTHROPIC_API_KEY=... agent-cli --permission-mode accept_edits
///   agent-cli tools search "create github issue" --explain
#[derive(Parser)]
#[command(
    name = "agent-cli",
    version,
    about,
    long_about,
    verbatim_doc_comment,
    args_conflicts_with_subcommands = true
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Command>,

    #[command(flatten)]
    pub(crate) run: RunArgs,

    /// Trust this folder for this run only: its own settings and .mcp.json may widen permissions
    /// (mode, allow rules, hooks, MCP server commands) without `agent-cli trust`.
    #[arg(long, global = true)]
    pub(crate) trust_project: bool,
}

#[derive(Args, Default)]
pub(crate) struct RunArgs {
    /// Run one task without interaction and print the result (calls that need approval are denied).
    #[arg(short = 'p', long = "print", value_name = "TASK")]
    pub(crate) print: Option<String>,

    /// What print mode writes to standard output.
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    pub(crate) output_format: OutputFormat,

    /// Continue the most recent session in this directory.
    #[arg(short = 'c', long = "continue", conflicts_with = "resume")]
    pub(crate) continue_: bool,

    /// Resume the session with this id; without one, pick from the recent sessions of this
    /// directory.
    #[arg(short = 'r', long, value_name = "ID", num_args = 0..=1, default_missing_value = "")]
    pub(crate) resume: Option<String>,

    /// The most model requests in one turn.
    #[arg(long, default_value_t = 50)]
    pub(crate) max_turns: usize,

    /// Extended thinking: `off`, `adaptive` (the model decides) or a budget in tokens such as
    /// 8000 (over the `thinking` setting; Anthropic's API only).
    #[arg(long, value_name = "off|adaptive|N")]
    pub(crate) thinking: Option<agent_cli::provider::Thinking>,

    /// With -p: the answer must be JSON valid against this JSON Schema file; standard output
    /// then holds only that JSON (the model is told what is wrong until it validates).
    #[arg(long, value_name = "FILE", requires = "print")]
    pub(crate) output_schema: Option<PathBuf>,

    #[command(flatten)]
    pub(crate) provider: ProviderArgs,

    #[command(flatten)]
    pub(crate) tools: ToolArgs,
}

impl RunArgs {
    pub(crate) fn provider_tools(&self) -> ToolArgs {
        self.tools.clone()
    }
}

#[derive(Args, Default, Clone)]
pub(crate) struct ProviderArgs {
    /// `anthropic`, `openai` (chat completions: any OpenAI-compatible server) or
    /// `openai-responses` (OpenAI's Responses API; the default with only OPENAI_API_KEY set).
    #[arg(long)]
    pub(crate) provider: Option<String>,
    /// The model's name.
    #[arg(long)]
    pub(crate) model: Option<String>,
    /// The provider's base URL, such as http://localhost:8080/v1.
    #[arg(long)]
    pub(crate) base_url: Option<String>,
}

#[derive(Args, Default, Clone)]
pub(crate) struct ToolArgs {
    /// Permission mode: default, accept_edits, plan, bypass or dont_ask.
    #[arg(long, value_name = "MODE")]
    pub(crate) permission_mode: Option<PermissionMode>,
    /// Tool deferral: true, false, auto or auto:N.
    #[arg(long, value_name = "MODE")]
    pub(crate) defer_tools: Option<String>,
    /// How found deferred tools are called: native (the provider loads them; the default with
    /// Anthropic and the Responses API), proxy (through execute_tool; the default elsewhere) or
    /// inline.
    #[arg(long, value_name = "STRATEGY")]
    pub(crate) activation: Option<String>,
    /// Another directory the file tools may use (repeatable).
    #[arg(long = "add-dir", value_name = "DIR")]
    pub(crate) add_dir: Vec<PathBuf>,
    /// An allow rule such as `shell(git status:*)` (repeatable).
    #[arg(long = "allow", value_name = "RULE")]
    pub(crate) allow: Vec<String>,
    /// A deny rule such as `shell(rm:*)` or `mcp__slack` (repeatable).
    #[arg(long = "deny", value_name = "RULE")]
    pub(crate) deny: Vec<String>,
    /// Where shell commands may write: read-only, workspace-write (the default: the working
    /// directory, added directories and temporary directories) or off. Enforced with Landlock.
    #[arg(long, value_name = "MODE")]
    pub(crate) sandbox: Option<SandboxMode>,
    /// A sentence-transformers model folder: tool_search ranks by keywords and by meaning
    /// together (over the `search.embeddings` setting; needs the `embeddings` build feature).
    #[arg(long, value_name = "DIR")]
    pub(crate) embeddings: Option<PathBuf>,
}

#[derive(Clone, Copy, Default, PartialEq, Eq, ValueEnum)]
pub(crate) enum OutputFormat {
    /// The final answer as text.
    #[default]
    Text,
    /// One JSON object with the answer, session id, turns and usage.
    Json,
    /// One JSON object per line as the session happens.
    StreamJson,
}

#[derive(Subcommand)]
pub(crate) enum Command {
    /// Report what this machine and folder support: the shell sandbox, trust, settings.
    Doctor,
    /// Trust a folder (the current one by default): what its own settings, .mcp.json and skills
    /// enable (permission mode, allow rules, hooks, MCP servers that run commands, send headers or
    /// fill in ${VAR}s, skills' allowed tools) applies from now on, as it is now (a changed item
    /// asks again).
    Trust {
        /// The folder.
        dir: Option<PathBuf>,
    },
    /// Inspect and run tools.
    Tools {
        #[command(subcommand)]
        command: ToolsCommand,
    },
    /// MCP servers: list the configured ones, or serve our tools to an MCP client.
    Mcp {
        #[command(subcommand)]
        command: McpCommand,
    },
    /// Skills: folders with a SKILL.md in .agent-cli/skills/, .claude/skills/ or the user's
    /// skills/ directory (a project's skill wins a name).
    Skills {
        #[command(subcommand)]
        command: SkillsCommand,
    },
}

#[derive(Subcommand)]
pub(crate) enum SkillsCommand {
    /// List every skill: name, whose it is, description, folder and the tools it allows.
    List,
    /// Search the skills as the skill tool's query does.
    Search {
        /// Keywords describing the task.
        query: String,
        /// How many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
    },
}

#[derive(Subcommand)]
#[expect(
    clippy::large_enum_variant,
    reason = "parsed once per run, never kept in bulk"
)]
pub(crate) enum McpCommand {
    /// Show each configured server (.mcp.json and the settings' mcpServers), its state and its tools.
    List {
        /// Seconds to wait for servers still connecting.
        #[arg(long, default_value_t = 30)]
        timeout: u64,
    },
    /// Serve the core tools, tool_search and execute_tool over MCP on stdio (or HTTP); every
    /// other tool (the MCP servers' too) is found with tool_search (`--defer-tools false` lists
    /// them all). This project's permission rules apply (calls that would need approval are
    /// denied).
    Serve {
        #[command(flatten)]
        tools: ToolArgs,
        /// Serve over streamable HTTP on this address (such as 127.0.0.1:8765, path /mcp)
        /// instead of stdio; many clients at once, statelessly.
        #[arg(long, value_name = "ADDR")]
        http: Option<std::net::SocketAddr>,
        /// The environment variable holding the token HTTP clients must send as
        /// `Authorization: Bearer <token>`; required unless ADDR is a loopback address.
        #[arg(long, value_name = "NAME", requires = "http")]
        token_env: Option<String>,
        /// Front the MCP servers of FILE (the .mcp.json format) instead of those of the settings
        /// and the project.
        #[arg(long, value_name = "FILE")]
        config: Option<std::path::PathBuf>,
        /// Serve only the MCP servers' tools (with tool_search and execute_tool), none of the
        /// built-in tools.
        #[arg(long)]
        no_builtins: bool,
    },
}

#[derive(Subcommand)]
pub(crate) enum ToolsCommand {
    /// List the tools a request carries (and, with --deferred, the deferred ones).
    List {
        /// List the deferred tools instead.
        #[arg(long)]
        deferred: bool,
        #[command(flatten)]
        tools: ToolArgs,
    },
    /// Search the tools as tool_search would.
    Search {
        /// Keywords, +word, select:NAME, discover:words or mcp__SERVER.
        query: String,
        /// Show how each result's score came about.
        #[arg(long)]
        explain: bool,
        /// How many results.
        #[arg(long, default_value_t = 10)]
        limit: usize,
        #[command(flatten)]
        tools: ToolArgs,
    },
    /// Call one tool through the whole lifecycle (with a permission prompt when needed).
    Call {
        /// The tool's name.
        name: String,
        /// The input, as a JSON object.
        #[arg(long, default_value = "{}")]
        input: String,
        #[command(flatten)]
        tools: ToolArgs,
    },
}
