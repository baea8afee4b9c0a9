//! JSON schemas of the operations' arguments that strict clients accept: an optional field
//! is left out of `required` and typed plainly (never a `["T","null"]` union).

/// Removes `"default": null` (which schemars writes for `#[serde(default)]` fields) and the
/// non-standard `"format": "uint32"` at every depth: an optional field is simply not
/// `required`, and a `null` default contradicts its declared type for strict clients.
pub fn portable(schema: &mut schemars::Schema) {
    fn strip(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                if map.get("default").is_some_and(serde_json::Value::is_null) {
                    map.remove("default");
                }
                // schemars' `"format": "uint32"` is no JSON Schema format: clients warn.
                if map.get("format").and_then(serde_json::Value::as_str) == Some("uint32") {
                    map.remove("format");
                }
                map.values_mut().for_each(strip);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(strip),
            _ => {}
        }
    }
    if let Some(map) = schema.as_object_mut() {
        map.remove("default");
        if map.get("format").and_then(serde_json::Value::as_str) == Some("uint32") {
            map.remove("format");
        }
        map.values_mut().for_each(strip);
    }
}

/// [`portable`], and `names` taken out of the schema's `required`: for a result whose
/// optional fields the protocol writes as `null` (so serde's schema would call them
/// required) and the MCP server leaves out.
pub fn optional(schema: &mut schemars::Schema, names: &[&str]) {
    portable(schema);
    if let Some(required) = schema
        .as_object_mut()
        .and_then(|map| map.get_mut("required"))
        .and_then(serde_json::Value::as_array_mut)
    {
        required.retain(|name| !name.as_str().is_some_and(|n| names.contains(&n)));
    }
}
