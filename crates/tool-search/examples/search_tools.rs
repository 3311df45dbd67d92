//! Indexes a few tools and searches them with each query form.
//!
//! Run with `cargo run -p tool-search --example search_tools`.

use tool_search::{Parameter, SearchIndex, ToolDocument};

fn main() -> Result<(), tool_search::SearchError> {
    let mut index = SearchIndex::default();
    index.add(
        ToolDocument::new("read_file", "Reads a file from the local filesystem.")
            .with_parameter(Parameter::described("path", "The file to read")),
    );
    index.add(
        ToolDocument::new(
            "mcp__slack__send_message",
            "Send a message to a Slack channel.",
        )
        .with_server("slack", "send_message")
        .with_parameter(Parameter::described("channel", "Channel id")),
    );
    index.add(
        ToolDocument::new(
            "mcp__slack__list_channels",
            "List the channels of a workspace.",
        )
        .with_server("slack", "list_channels"),
    );
    index.add(ToolDocument::new("weather", "查询城市的天气预报"));

    for query in [
        "post a note to slack",
        "+channel slack",
        "select:read_file,nope",
        "mcp__slack",
        "天气预报",
        "discover:file",
    ] {
        let results = index.search(query, 3)?;
        println!(
            "{query:<24} → {:?}",
            results.hits.iter().map(|h| &h.name).collect::<Vec<_>>()
        );
        if !results.missing.is_empty() {
            println!("{:<24}   not found: {:?}", "", results.missing);
        }
    }
    if let Some(explanation) = index.explain("post a note to slack", "mcp__slack__send_message")? {
        print!("{explanation}");
    }
    Ok(())
}
