//! Each code the component reports, as the result [`Code`] every front end spells: the one
//! place the WIT enums meet the result codes.

use satyrn_code::Code;

use crate::{ProblemCode, ReadCode, RefusalCode};

impl From<ProblemCode> for Code {
    fn from(code: ProblemCode) -> Self {
        use ProblemCode as P;
        match code {
            P::SelectorEmpty => Code::SelectorEmpty,
            P::LineEndingsUnsupported => Code::LineEndingsUnsupported,
            P::NoOpEdit => Code::NoOpEdit,
            P::AnchorMissing => Code::AnchorMissing,
            P::AnchorAmbiguous => Code::AnchorAmbiguous,
            P::OccurrenceOutOfRange => Code::OccurrenceOutOfRange,
            P::EditsOverlap => Code::EditsOverlap,
            P::InsertionsCollide => Code::InsertionsCollide,
            P::InsertionInReplacement => Code::InsertionInReplacement,
            P::NoOpBatch => Code::NoOpBatch,
        }
    }
}

impl From<ReadCode> for Code {
    fn from(code: ReadCode) -> Self {
        match code {
            ReadCode::Unavailable => Code::ReadUnavailable,
            ReadCode::NotText => Code::ReadNotText,
            ReadCode::TooLarge => Code::ReadTooLarge,
            ReadCode::OutOfRange => Code::ReadOutOfRange,
            ReadCode::Private => Code::PathPrivate,
        }
    }
}

impl From<RefusalCode> for Code {
    fn from(code: RefusalCode) -> Self {
        match code {
            RefusalCode::PathPrivate => Code::PathPrivate,
            RefusalCode::PathUndeclared => Code::PathUndeclared,
            RefusalCode::TargetExists => Code::TargetExists,
            RefusalCode::RevisionUnavailable => Code::RevisionUnavailable,
            RefusalCode::RevisionStale => Code::RevisionStale,
            RefusalCode::AnchorMissing => Code::AnchorMissing,
            RefusalCode::AnchorAmbiguous => Code::AnchorAmbiguous,
            RefusalCode::MutationFailed => Code::MutationFailed,
        }
    }
}
