//! `write`: a whole file's new content — lock, decide in the component (create, or
//! overwrite at the caller's revision), publish (a no-replace create, or the atomic
//! replace of `publish`).

use schemars::JsonSchema;
use serde::Serialize;

use super::{Scope, Seen, internal, lock, partly_seen, plan_base, refusal};
use crate::WriteArgs;
use satyrn_code::{Code, Failure};
use satyrn_engine as engine;
use satyrn_publish as publish;

/// The result of a `write`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[schemars(transform = super::schema::portable)]
pub struct WriteResult {
    /// The written path.
    pub path: String,
    /// The file's revision after the write.
    pub sha256: String,
    /// Whether the file was created (otherwise overwritten).
    pub created: bool,
}

/// Writes one file under the worktree lock.
///
/// # Errors
///
/// The first refusal, as a [`Failure`] with its code (`TARGET_EXISTS` when a create finds
/// the path taken, by the decision or by a concurrent creator at the commit; `PARTLY_SEEN`
/// when an overwrite that passed every gate is of a revision seen only in part).
pub fn write(scope: Scope<'_>, args: &WriteArgs) -> Result<WriteResult, Failure> {
    let _lock = lock(scope)?;
    let mut mutator = scope.mutator()?;
    let request = engine::WriteRequest {
        path: args.path.clone(),
        writable_paths: scope.contract.writable_paths.clone(),
        private_paths: scope.contract.private_paths.clone(),
        expected_sha256: args.expected_sha256.clone(),
        content: args.content.clone(),
    };
    let plan = mutator
        .call(|m| m.write(&request))
        .map_err(internal)?
        .map_err(refusal)?;
    match plan {
        engine::WritePlan::Create(created) => {
            if let Some(message) = satyrn_mutator_core::path::new_name_refusal(&created.path) {
                return Err(Failure::new(Code::InvalidRequest, message));
            }
            if created.path != args.path || args.expected_sha256.is_some() {
                return Err(internal(format!(
                    "the component planned to create `{}` for a request about `{}`",
                    created.path, args.path
                )));
            }
            publish::create(scope.root.dir(), &created.path, created.content.as_bytes())?;
            Ok(WriteResult {
                path: created.path,
                sha256: created.next_sha256,
                created: true,
            })
        }
        engine::WritePlan::Overwrite(plan) => {
            let base = plan_base(
                &plan,
                &args.path,
                args.expected_sha256.as_deref(),
                satyrn_mutator_core::gates::MAX_TEXT_FILE_BYTES,
            )?;
            if args.seen == Seen::Part {
                return Err(partly_seen(&args.path, "overwrite"));
            }
            publish::publish(scope.root.dir(), &plan.path, &base, &plan.new_content)?;
            Ok(WriteResult {
                path: plan.path,
                sha256: plan.next_sha256,
                created: false,
            })
        }
    }
}
