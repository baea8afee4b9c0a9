//! The edit algebra (`satyrn_mutator_core::edit::apply`) against its plain reference
//! model (`components/mutator-core/tests/common/edit_model.rs`): for any text and batch,
//! the same new bytes or the same problems (edit index and code, in order), never a panic.
use satyrn_mutator_core::edit::{self, EditOp};

#[path = "../../components/mutator-core/tests/common/edit_model.rs"]
mod edit_model;

use edit_model::{Codes, E, model};

/// Bounds that keep the quadratic model fast; the library's limits are far larger.
const MAX_TEXT: usize = 2048;
const MAX_EDITS: usize = 12;

/// One input: a text and its batch, each edit `(insert, selector, new_text, occurrence)`.
pub type Input = (String, Vec<(bool, String, String, Option<u8>)>);

/// The target's checks on one input; panics on a violation.
pub fn check(input: Input) {
    let (text, raw) = input;
    if text.len() > MAX_TEXT || raw.is_empty() || raw.len() > MAX_EDITS {
        return;
    }
    let edits: Vec<E> = raw
        .into_iter()
        .map(|(insert, selector, new_text, occurrence)| E {
            insert,
            selector,
            new_text,
            occurrence: occurrence.map(|n| u32::from(n % 8) + 1),
        })
        .collect();
    let ops: Vec<EditOp<'_>> = edits.iter().map(E::op).collect();
    let expected = model(&text, &edits);
    match (expected, edit::apply(&text, &ops)) {
        (Ok(bytes), Ok(applied)) => {
            assert_eq!(bytes.as_bytes(), applied.content.as_slice());
            assert!(std::str::from_utf8(&applied.content).is_ok());
        }
        (Err(codes), Err(rejection)) => {
            let got: Codes = rejection
                .problems
                .iter()
                .map(|p| (p.index.map(|i| i as usize), p.code.as_str()))
                .collect();
            assert_eq!(codes, got);
        }
        (expected, got) => panic!("model {expected:?} but library {got:?}"),
    }
}
