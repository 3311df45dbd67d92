//! Tool documents and their weighted fields.

use serde::{Deserialize, Serialize};

/// One parameter of a tool's input.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameter {
    /// The property name.
    pub name: String,
    /// Its description, if the schema has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl Parameter {
    /// A parameter with a name only.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: None,
        }
    }

    /// A parameter with a description.
    pub fn described(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: Some(description.into()),
        }
    }
}

/// What the engine knows about a tool.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolDocument {
    /// The tool's unique name.
    pub name: String,
    /// Other names that find it with `select:`.
    #[serde(default)]
    pub aliases: Vec<String>,
    /// A human title, if it has one.
    #[serde(default)]
    pub label: Option<String>,
    /// The MCP server it comes from.
    #[serde(default)]
    pub server: Option<String>,
    /// Its name on that server.
    #[serde(default)]
    pub mcp_tool: Option<String>,
    /// A few words of capability.
    #[serde(default)]
    pub search_hint: Option<String>,
    /// The description.
    #[serde(default)]
    pub description: String,
    /// The input's parameters.
    #[serde(default)]
    pub parameters: Vec<Parameter>,
}

impl ToolDocument {
    /// A document with a name and a description.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
            ..Self::default()
        }
    }

    /// Sets the MCP server and the tool's name there.
    #[must_use]
    pub fn with_server(mut self, server: impl Into<String>, tool: impl Into<String>) -> Self {
        self.server = Some(server.into());
        self.mcp_tool = Some(tool.into());
        self
    }

    /// Sets the search hint.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.search_hint = Some(hint.into());
        self
    }

    /// Adds a parameter.
    #[must_use]
    pub fn with_parameter(mut self, parameter: Parameter) -> Self {
        self.parameters.push(parameter);
        self
    }

    /// Adds an alias.
    #[must_use]
    pub fn with_alias(mut self, alias: impl Into<String>) -> Self {
        self.aliases.push(alias.into());
        self
    }

    /// Calls `f` with each piece of text of one field (parameters have one piece each), without
    /// copying it.
    pub(crate) fn for_each_field_text(&self, field: Field, mut f: impl FnMut(&str)) {
        let single = match field {
            Field::Name => Some(self.name.as_str()),
            Field::Label => self.label.as_deref(),
            Field::Server => self.server.as_deref(),
            Field::McpTool => self.mcp_tool.as_deref(),
            Field::SearchHint => self.search_hint.as_deref(),
            Field::Description => Some(self.description.as_str()),
            Field::Parameters => {
                self.parameters.iter().for_each(|p| f(&p.name));
                return;
            }
            Field::ParameterText => {
                self.parameters
                    .iter()
                    .filter_map(|p| p.description.as_deref())
                    .for_each(f);
                return;
            }
        };
        if let Some(text) = single {
            f(text);
        }
    }
}

/// A weighted field of a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Field {
    /// The tool's name.
    Name,
    /// Its label or title.
    Label,
    /// The MCP server's name.
    Server,
    /// The tool's name on its MCP server.
    McpTool,
    /// The search hint.
    SearchHint,
    /// The description.
    Description,
    /// The parameters' names.
    Parameters,
    /// The parameters' descriptions.
    ParameterText,
}

impl Field {
    /// Every field, in index order.
    pub const ALL: [Field; 8] = [
        Field::Name,
        Field::Label,
        Field::Server,
        Field::McpTool,
        Field::SearchHint,
        Field::Description,
        Field::Parameters,
        Field::ParameterText,
    ];

    /// The field's position in [`Field::ALL`].
    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The field's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Field::Name => "name",
            Field::Label => "label",
            Field::Server => "server",
            Field::McpTool => "mcp_tool",
            Field::SearchHint => "search_hint",
            Field::Description => "description",
            Field::Parameters => "parameters",
            Field::ParameterText => "parameter_text",
        }
    }
}

/// How much a term in each field counts.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FieldWeights(pub [f32; 8]);

impl FieldWeights {
    /// The weight of `field`.
    pub fn get(&self, field: Field) -> f32 {
        self.0[field.index()]
    }

    /// Sets the weight of `field`.
    #[must_use]
    pub fn with(mut self, field: Field, weight: f32) -> Self {
        self.0[field.index()] = weight;
        self
    }
}

impl Default for FieldWeights {
    /// Chosen by measurement on the benchmark sets (`cargo xtask bench-search --tune`): names
    /// three times the description, hints 2.5 times, parameter names like the description and
    /// their descriptions a little under. With BM25F-style weighting the weights' scale also
    /// sets how fast term frequency saturates; this scale suits the BM25+ defaults (k1 1.2).
    fn default() -> Self {
        Self([1.2, 1.2, 0.6, 1.2, 1.0, 0.4, 0.4, 0.3])
    }
}
