//! The contract's YAML, read as parser events: one top-level mapping of scalars and lists
//! of scalars, without ever building a general tree (nesting deeper is only counted), with
//! anchors, aliases and explicit tags refused.

use yaml_rust2::Yaml;
use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::scanner::TScalarStyle;

use super::ContractError;

/// A scalar, typed the way YAML's core schema types a plain scalar.
#[derive(Debug)]
pub(super) enum Scalar {
    Str(String),
    /// A null, boolean or number: never taken as a string.
    Other,
}

/// A top-level value: what the contract's shape allows, or something else.
#[derive(Debug)]
pub(super) enum Value {
    Scalar(Scalar),
    List(Vec<Scalar>),
    /// A mapping, or a list that holds more than scalars.
    Nested,
}

/// Reads one top-level mapping as `(key, value)` pairs in document order, without ever
/// building a general tree: nesting deeper than a list of scalars is only counted.
pub(super) fn read_fields(text: &str) -> Result<Vec<(String, Value)>, ContractError> {
    let mut parser = Parser::new_from_str(text);
    let mut next = || -> Result<Event, ContractError> {
        parser
            .next_token()
            .map(|(event, _)| event)
            .map_err(|e| ContractError::Invalid(format!("the contract is not valid YAML: {e}")))
    };
    let mut fields = Vec::new();
    loop {
        match next()? {
            Event::StreamStart | Event::DocumentStart | Event::Nothing => {}
            Event::MappingStart(anchor, tag) => {
                reject_anchor_and_tag(anchor, tag.is_some())?;
                break;
            }
            Event::StreamEnd => {
                return Err(ContractError::Invalid("the contract is empty".to_string()));
            }
            _ => {
                return Err(ContractError::Invalid(
                    "the contract must be a YAML mapping".to_string(),
                ));
            }
        }
    }
    loop {
        let key = match next()? {
            Event::MappingEnd => break,
            Event::Scalar(value, style, anchor, tag) => {
                reject_anchor_and_tag(anchor, tag.is_some())?;
                match scalar(value, style) {
                    Scalar::Str(key) => key,
                    Scalar::Other => {
                        return Err(ContractError::Invalid(
                            "contract keys must be strings".to_string(),
                        ));
                    }
                }
            }
            Event::Alias(_) => return Err(alias()),
            _ => {
                return Err(ContractError::Invalid(
                    "contract keys must be strings".to_string(),
                ));
            }
        };
        let value = read_value(&mut next)?;
        fields.push((key, value));
    }
    loop {
        match next()? {
            Event::DocumentEnd | Event::Nothing => {}
            Event::StreamEnd => return Ok(fields),
            _ => {
                return Err(ContractError::Invalid(
                    "the contract must be exactly one YAML document".to_string(),
                ));
            }
        }
    }
}

fn read_value(
    next: &mut impl FnMut() -> Result<Event, ContractError>,
) -> Result<Value, ContractError> {
    match next()? {
        Event::Scalar(value, style, anchor, tag) => {
            reject_anchor_and_tag(anchor, tag.is_some())?;
            Ok(Value::Scalar(scalar(value, style)))
        }
        Event::SequenceStart(anchor, tag) => {
            reject_anchor_and_tag(anchor, tag.is_some())?;
            let mut items = Vec::new();
            let mut nested = false;
            loop {
                match next()? {
                    Event::SequenceEnd => break,
                    Event::Scalar(value, style, anchor, tag) => {
                        reject_anchor_and_tag(anchor, tag.is_some())?;
                        items.push(scalar(value, style));
                    }
                    Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                        reject_anchor_and_tag(anchor, tag.is_some())?;
                        skip_nested(next)?;
                        nested = true;
                    }
                    Event::Alias(_) => return Err(alias()),
                    other => return Err(unexpected(&other)),
                }
            }
            Ok(if nested {
                Value::Nested
            } else {
                Value::List(items)
            })
        }
        Event::MappingStart(anchor, tag) => {
            reject_anchor_and_tag(anchor, tag.is_some())?;
            skip_nested(next)?;
            Ok(Value::Nested)
        }
        Event::Alias(_) => Err(alias()),
        other => Err(unexpected(&other)),
    }
}

/// Consumes events up to the end of a collection whose start was just read.
fn skip_nested(
    next: &mut impl FnMut() -> Result<Event, ContractError>,
) -> Result<(), ContractError> {
    let mut depth = 1usize;
    while depth > 0 {
        match next()? {
            Event::SequenceStart(anchor, tag) | Event::MappingStart(anchor, tag) => {
                reject_anchor_and_tag(anchor, tag.is_some())?;
                depth += 1;
            }
            Event::SequenceEnd | Event::MappingEnd => depth -= 1,
            Event::Scalar(_, _, anchor, tag) => reject_anchor_and_tag(anchor, tag.is_some())?,
            Event::Alias(_) => return Err(alias()),
            other => return Err(unexpected(&other)),
        }
    }
    Ok(())
}

fn scalar(value: String, style: TScalarStyle) -> Scalar {
    if style != TScalarStyle::Plain {
        return Scalar::Str(value);
    }
    match Yaml::from_str(&value) {
        Yaml::String(s) => Scalar::Str(s),
        _ => Scalar::Other,
    }
}

fn reject_anchor_and_tag(anchor: usize, tagged: bool) -> Result<(), ContractError> {
    if anchor != 0 {
        return Err(ContractError::Invalid(
            "YAML anchors are not allowed in a contract".to_string(),
        ));
    }
    if tagged {
        return Err(ContractError::Invalid(
            "YAML tags are not allowed in a contract".to_string(),
        ));
    }
    Ok(())
}

fn alias() -> ContractError {
    ContractError::Invalid("YAML aliases are not allowed in a contract".to_string())
}

fn unexpected(event: &Event) -> ContractError {
    ContractError::Invalid(format!(
        "unexpected YAML structure in the contract ({event:?})"
    ))
}
