//! The MCP server: the tools (`read`, `edit`, `list`, `search`, `write`, `delete`,
//! `boundary`) over one frozen contract and one worktree.
//!
//! Every call runs the operation layer ([`satyrn_operation`]) on a worker thread (the
//! engine enters a small runtime of its own per call, which must not run inside the
//! server's; [`super::workers`] keeps the threads between calls), with the engine loaded
//! once for the session and component instances kept between calls
//! ([`satyrn_engine::Instances`]). Writes are serialized by the worktree lock that
//! `satyrn-host protocol` takes too.

use std::sync::{Arc, Mutex};

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use tokio_util::sync::CancellationToken;

use super::args::NoArgs;
use super::output::BoundaryOutput;
use super::render;
use super::seen::Views;
use super::workers::Workers;
use satyrn_code::Failure;
use satyrn_contract::Contract;
use satyrn_contract::repo::RepoRoot;
use satyrn_engine::{EngineError, Instances, Loaded};
use satyrn_git::Git;
use satyrn_operation::{self as operation, Scope};
use satyrn_operation::{
    DeleteArgs, EditArgs, EditDetails, EditResult, ListArgs, ReadArgs, ReadResult, SearchArgs,
    Seen, WriteArgs,
};

/// What a session holds: fixed at start, never changed by a tool argument.
#[derive(Debug)]
pub struct Session {
    /// The worktree root, opened at start.
    pub root: RepoRoot,
    /// The contract, frozen at start (its bytes were read once).
    pub contract: Contract,
    /// The engine, loaded once.
    pub loaded: Loaded,
    /// The component instances over `root`, kept between calls.
    instances: Instances,
    /// What this session has seen of each path ([`Views`]): the base of a call without
    /// `expected_sha256`, and whether it was seen whole.
    views: Mutex<Views>,
    /// Slots for calls running at once ([`MAX_CONCURRENT_CALLS`]).
    slots: Arc<tokio::sync::Semaphore>,
    /// The threads that run the calls.
    workers: Workers,
    /// The ledger a confined run's broker records each publication in (provenance).
    ledger: Option<Arc<satyrn_publish::ledger::Ledger>>,
    /// The client runs under `satyrn-host confine`'s kernel rules (said in the instructions).
    confined: bool,
}

impl Session {
    /// A session over `root` and `contract`.
    ///
    /// # Errors
    ///
    /// [`EngineError`] when the worktree descriptor cannot be duplicated for the instances.
    pub fn new(root: RepoRoot, contract: Contract, loaded: Loaded) -> Result<Self, EngineError> {
        let instances = Instances::new(&loaded, root.dir())?;
        Ok(Self {
            root,
            contract,
            loaded,
            instances,
            views: Mutex::new(Views::default()),
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_CALLS)),
            workers: Workers::default(),
            ledger: None,
            confined: false,
        })
    }

    /// This session, serving a client that runs under `satyrn-host confine`'s kernel rules
    /// (when `confined`): the instructions then say that every other write fails.
    #[must_use]
    pub fn confined(mut self, confined: bool) -> Self {
        self.confined = confined;
        self
    }

    /// This session, recording every publication in `ledger` (a confined run's broker).
    #[must_use]
    pub fn with_ledger(mut self, ledger: Option<Arc<satyrn_publish::ledger::Ledger>>) -> Self {
        self.ledger = ledger;
        self
    }

    /// Records a publication (`None`: a deletion) in the ledger, when there is one.
    fn published(&self, path: &str, sha256: Option<&str>) {
        if let Some(ledger) = &self.ledger {
            ledger.record(path, sha256);
        }
    }

    /// How many calls are running (each holds one of the [`MAX_CONCURRENT_CALLS`] slots
    /// until its thread has finished).
    #[must_use]
    pub fn in_flight(&self) -> usize {
        MAX_CONCURRENT_CALLS - self.slots.available_permits()
    }

    fn scope(&self) -> Scope<'_> {
        Scope {
            root: &self.root,
            contract: &self.contract,
            loaded: &self.loaded,
            instances: &self.instances,
        }
    }

    /// The views, under their lock (a poisoned lock still holds a usable map).
    fn views(&self) -> std::sync::MutexGuard<'_, Views> {
        self.views
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The revision last seen of `path` and how much of it.
    fn base(&self, path: &str) -> Option<(String, Seen)> {
        self.views().base(path)
    }

    /// Records what a published change set did: in the ledger always, in the views unless
    /// the client cancelled the call (it never sees the result). A modified file keeps what
    /// its base was seen as; a moved file's destination what its source's base was seen as
    /// (`bases`: each path's base revision and how much of it the request said was seen); a
    /// created one is seen whole; a deleted one is gone.
    fn settled(&self, done: &operation::ChangeSetResult, bases: &Bases, ct: &CancellationToken) {
        for file in &done.files {
            self.published(&file.path, file.sha256.as_deref());
            let mut views = self.views();
            let Some(sha) = &file.sha256 else {
                views.forget(&file.path);
                continue;
            };
            if ct.is_cancelled() {
                continue;
            }
            if let Some(from) = &file.moved_from {
                let whole = bases.get(from).is_none_or(|(_, seen)| *seen == Seen::Whole);
                views.took(&file.path, sha, whole);
            } else if file.status == operation::FileStatus::Created {
                views.took(&file.path, sha, true);
            } else {
                let base = bases.get(&file.path).map(|(sha, _)| sha.as_str());
                views.edited(&file.path, base, sha);
            }
        }
    }
}

/// Each path's base revision in a change set's request, and how much of it was seen.
type Bases = std::collections::BTreeMap<String, (String, Seen)>;

/// The server: the session and the tool router.
#[derive(Debug, Clone)]
pub struct Server {
    session: Arc<Session>,
    tool_router: ToolRouter<Self>,
}

/// Runs `work` on a worker thread ([`Workers`]) and awaits it. At most
/// [`MAX_CONCURRENT_CALLS`] run at once; later calls wait for a slot, so a client cannot make
/// the server start unboundedly many component instances.
///
/// A call the client cancelled (`notifications/cancelled`: `ct`) while it waited for a slot,
/// or before its worker picked it up, never runs. One cancelled while it runs goes on (a
/// publish is never cut short), but `work` gets `ct` and must not let its result into the
/// session's views: the client never sees that result.
async fn off_thread<T: Send + 'static>(
    session: &Arc<Session>,
    ct: CancellationToken,
    work: impl FnOnce(&Session, &CancellationToken) -> T + Send + 'static,
) -> Result<T, ErrorData> {
    let permit = tokio::select! {
        biased;
        () = ct.cancelled() => return Err(cancelled()),
        permit = Arc::clone(&session.slots).acquire_owned() => permit
            .map_err(|_| ErrorData::internal_error("the server is shutting down", None))?,
    };
    let (tx, rx) = tokio::sync::oneshot::channel();
    let worker = Arc::clone(session);
    let started = session.workers.run(move || {
        let result = (!ct.is_cancelled()).then(|| work(&worker, &ct));
        drop(permit);
        let _ = tx.send(result);
    });
    if let Err(e) = started {
        return Err(ErrorData::internal_error(
            format!("cannot start a thread for the call: {e}"),
            None,
        ));
    }
    rx.await
        .map_err(|_| ErrorData::internal_error("the call ended without a result", None))?
        .ok_or_else(cancelled)
}

/// The answer to a call cancelled before it ran (a client ignores it: it cancelled).
fn cancelled() -> ErrorData {
    ErrorData::invalid_request(
        "the call was cancelled before it ran; nothing was done",
        None,
    )
}

/// The most calls of one session that run at once: 8.
pub const MAX_CONCURRENT_CALLS: usize = 8;

/// A refusal as the model reads it: `CODE: message`, then the batch's problems one per
/// line, then the same as JSON. `isError` is set.
fn refused(failure: &Failure, details: Option<&EditDetails>) -> CallToolResult {
    let mut text = format!("{}: {}", failure.code, failure.message);
    let mut json = serde_json::json!({"code": failure.code, "message": failure.message});
    match details {
        Some(EditDetails::Rejected(rejection)) => {
            for problem in &rejection.problems {
                text.push_str(&format!("\n- {}: {}", problem.code, problem.message));
            }
            json["problems"] = serde_json::to_value(&rejection.problems).unwrap_or_default();
            json["problems_omitted"] = rejection.problems_omitted.into();
        }
        Some(EditDetails::Stale(stale)) => {
            json["current_sha256"] = stale.current_sha256.clone().into();
        }
        Some(EditDetails::ChangeSet(rejection)) => {
            for problem in &rejection.problems {
                let at = problem
                    .line
                    .map(|l| format!(" (patch line {l})"))
                    .unwrap_or_default();
                text.push_str(&format!(
                    "\n- {}{at}: {}: {}",
                    problem.path, problem.code, problem.message
                ));
                for hunk in &problem.hunks {
                    text.push_str(&format!(
                        "\n  - hunk {}: {}: {}",
                        hunk.hunk, hunk.code, hunk.message
                    ));
                }
                for edit in problem.edits.iter().flatten() {
                    text.push_str(&format!("\n  - {}: {}", edit.code, edit.message));
                }
            }
            json["problems"] = serde_json::to_value(&rejection.problems).unwrap_or_default();
        }
        _ => {}
    }
    text.push_str("\n\n");
    text.push_str(&json.to_string());
    CallToolResult::error(vec![ContentBlock::text(text)])
}

/// A tool's answer to an operation's `outcome`: the result, structured, with `text` of it
/// for the model; or the refusal.
fn answer<T: serde::Serialize>(
    outcome: Result<T, Failure>,
    text: impl FnOnce(&T) -> String,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(value) => {
            let text = text(&value);
            structured(&value, text)
        }
        Err(failure) => Ok(refused(&failure, None)),
    }
}

/// [`answer`] for a change set: its refusal carries each problem of the set.
fn answer_set(
    outcome: Result<operation::ChangeSetResult, operation::EditRefusal>,
) -> Result<CallToolResult, ErrorData> {
    match outcome {
        Ok(done) => structured(&done, render::change_set(&done)),
        Err((failure, details)) => Ok(refused(&failure, details.as_deref())),
    }
}

/// A success with `value` as structured content, its fields that are `null` left out (an
/// absent optional field is what the output schema allows; the protocol writes `null`), and
/// `text` for clients that show text only.
fn structured<T: serde::Serialize>(value: &T, text: String) -> Result<CallToolResult, ErrorData> {
    fn drop_nulls(value: &mut serde_json::Value) {
        match value {
            serde_json::Value::Object(map) => {
                map.retain(|_, v| !v.is_null());
                map.values_mut().for_each(drop_nulls);
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(drop_nulls),
            _ => {}
        }
    }
    let mut json = serde_json::to_value(value)
        .map_err(|e| ErrorData::internal_error(format!("cannot encode the result: {e}"), None))?;
    drop_nulls(&mut json);
    let mut result = CallToolResult::structured(json);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}

#[tool_router]
impl Server {
    /// A server for `session`.
    #[must_use]
    pub fn new(session: Session) -> Self {
        Self {
            session: Arc::new(session),
            tool_router: Self::tool_router(),
        }
    }

    /// The session (for shutdown).
    #[must_use]
    pub fn session(&self) -> &Arc<Session> {
        &self.session
    }

    /// `args` with every path taken as agents write them, relative to the worktree root.
    fn as_agents_write<T: operation::AgentPaths>(&self, mut args: T) -> T {
        args.as_agents_write(&self.session.root.path().to_string_lossy());
        args
    }

    #[tool(
        name = "read",
        description = "Read a text file of the repository, at most 2000 lines or 50 KiB per call; the result says \
                       how to continue. Paths are relative to the repository root; files outside it, symbolic links, \
                       .git and binary files cannot be read. The result's sha256 is recorded: a later edit of the file \
                       needs no revision.",
        output_schema = schema_for_output::<ReadResult>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn read(
        &self,
        Parameters(args): Parameters<ReadArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = self.as_agents_write(args);
        let outcome = off_thread(&self.session, context.ct, move |session, ct| {
            operation::read(session.scope(), &args).inspect(|page| {
                if !ct.is_cancelled() {
                    session.views().read(page);
                }
            })
        })
        .await?;
        match outcome {
            Ok(page) => {
                let mut text = page.text.clone();
                if let Some(notice) = &page.notice {
                    text.push_str("\n\n");
                    text.push_str(notice);
                }
                structured(&page, text)
            }
            Err(failure) => Ok(refused(&failure, None)),
        }
    }

    #[tool(
        name = "edit",
        description = "Edit a file you have read with exact-text edits, applied all together or not at all. The file \
                       must be declared writable by the task contract (use write to create a file). Each entry of edits is \
                       {op: \"replace\", old_text, new_text} or {op: \"insert_after\", anchor_text, new_text}; text is \
                       matched byte for byte against the file as you read it. When the text occurs more than once, add \
                       occurrence (1 = the first). A refused batch changes nothing and lists every problem with line \
                       numbers. Leave expected_sha256 out: the revision of your last read is used.",
        output_schema = schema_for_output::<EditResult>(),
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn edit(
        &self,
        Parameters(args): Parameters<EditArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        // The revision the model has seen when it sends the call, not when a slot frees up:
        // a concurrent edit's result, which the model never saw, must not become the base.
        let mut args = self.as_agents_write(args);
        if args.expected_sha256.is_none() {
            args.expected_sha256 = self.session.base(&args.path).map(|(sha, _)| sha);
        }
        let outcome = off_thread(&self.session, context.ct, move |session, ct| {
            operation::edit(session.scope(), &args).inspect(|edited| {
                session.published(&edited.path, Some(&edited.sha256));
                if !ct.is_cancelled() {
                    let base = args.expected_sha256.as_deref();
                    session.views().edited(&edited.path, base, &edited.sha256);
                }
            })
        })
        .await?;
        match outcome {
            Ok(edited) => {
                let mut text = format!("Edited {} (new sha256 {}).", edited.path, edited.sha256);
                for hunk in &edited.preview {
                    text.push_str(&format!(
                        "\nLines {}-{}:\n{}",
                        hunk.start_line, hunk.end_line, hunk.text
                    ));
                }
                structured(&edited, text)
            }
            Err((failure, details)) => Ok(refused(&failure, details.as_deref())),
        }
    }

    #[tool(
        name = "apply_patch",
        output_schema = schema_for_output::<operation::ChangeSetResult>(),
        description = "Change several files at once with a patch, applied all together or not at all. Format:\n\
                       *** Begin Patch\n\
                       *** Update File: src/app.py\n\
                       @@ def greet():\n\
                       -    print(\"hi\")\n\
                       +    print(\"hello\")\n\
                       *** Add File: src/new.py\n\
                       +x = 1\n\
                       *** Delete File: src/old.py\n\
                       *** Update File: a.txt\n\
                       *** Move to: b.txt\n\
                       @@\n\
                       \x20context line\n\
                       -old line\n\
                       +new line\n\
                       *** End Patch\n\
                       Hunk lines start with a space (context), - (removed) or + (added); context and removed lines \
                       must match the file exactly and once (an @@ line's text narrows the search to after that exact \
                       line). Add refuses an existing file, Move to an existing destination. Files you have read use \
                       the revision you read; pass expected_sha256 {path: sha256} for others. A refused patch changes \
                       nothing and names every problem (for a hunk that does not match: where the file differs).",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn apply_patch(
        &self,
        Parameters(args): Parameters<operation::PatchArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut args = self.as_agents_write(args);
        // A revision the model passed itself is its word that it knows the file.
        args.seen.clear();
        let root = args.agent_root.clone().unwrap_or_default();
        for path in operation::patch_paths(&args.patch, &root) {
            if !args.expected_sha256.contains_key(&path)
                && let Some((sha, seen)) = self.session.base(&path)
            {
                args.expected_sha256.insert(path.clone(), sha);
                args.seen.insert(path, seen);
            }
        }
        let bases: Bases = args
            .expected_sha256
            .iter()
            .map(|(path, sha)| {
                let seen = args.seen.get(path).copied().unwrap_or(Seen::Whole);
                (path.clone(), (sha.clone(), seen))
            })
            .collect();
        let outcome = off_thread(&self.session, context.ct, move |session, ct| {
            operation::apply_patch(session.scope(), &args)
                .inspect(|done| session.settled(done, &bases, ct))
        })
        .await?;
        answer_set(outcome)
    }

    #[tool(
        name = "change_set",
        output_schema = schema_for_output::<operation::ChangeSetResult>(),
        description = "Change several files at once, all together or not at all: ops is a list of {op: \"edit\", \
                       path, edits} (edits as for edit), {op: \"write\", path, content} (create, or overwrite a file \
                       you have read), {op: \"delete\", path} or {op: \"move\", path, to} (to must not exist unless \
                       you pass its to_expected_sha256). Each operation sees what the earlier ones made. Files you have \
                       read use the revision you read. A refused set changes nothing and names every problem.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn change_set(
        &self,
        Parameters(args): Parameters<operation::ChangeSetArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut args = self.as_agents_write(args);
        let mut touched: Vec<String> = Vec::new();
        for entry in &mut args.ops {
            entry.seen = Seen::Whole;
            // Only the first operation on a path needs its revision.
            if entry.expected_sha256.is_none()
                && !touched.contains(&entry.path)
                && let Some((sha, seen)) = self.session.base(&entry.path)
                && (entry.op != operation::ChangeKind::Write
                    || self.session.root.holds(&entry.path))
            {
                entry.expected_sha256 = Some(sha);
                entry.seen = seen;
            }
            touched.push(entry.path.clone());
            touched.extend(entry.to.clone());
        }
        let mut bases = Bases::new();
        for entry in &args.ops {
            if let Some(sha) = &entry.expected_sha256 {
                bases
                    .entry(entry.path.clone())
                    .or_insert_with(|| (sha.clone(), entry.seen));
            }
        }
        let outcome = off_thread(&self.session, context.ct, move |session, ct| {
            operation::change_set(session.scope(), &args)
                .inspect(|done| session.settled(done, &bases, ct))
        })
        .await?;
        answer_set(outcome)
    }

    #[tool(
        name = "list",
        output_schema = schema_for_output::<operation::ListResult>(),
        description = "List the files and directories under a directory of the repository (default: its root), \
                       depth first with names sorted; recursive lists everything beneath it, pattern keeps the \
                       paths matching an fnmatch pattern (`*` matches `/` too). At most 1000 entries per call: pass \
                       the result's next_cursor as cursor to continue. .git, private files and the contents of \
                       symbolic links are never shown.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn list(
        &self,
        Parameters(args): Parameters<ListArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = self.as_agents_write(args);
        let outcome = off_thread(&self.session, context.ct, move |session, _| {
            operation::list(session.scope(), &args)
        })
        .await?;
        answer(outcome, render::list)
    }

    #[tool(
        name = "search",
        output_schema = schema_for_output::<operation::SearchResult>(),
        description = "Find lines in the repository's files: query is a literal (or a regular expression with \
                       regex: true), under path (a directory or one file; default the root), optionally only files \
                       matching glob (fnmatch, e.g. `*.py`), with context lines around each match. Each matched \
                       file comes with its sha256, so you can edit it right away. Binary, non-UTF-8, over-16-MiB \
                       files and symbolic links are skipped and named; private files are never searched. Pass \
                       next_cursor as cursor to continue.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn search(
        &self,
        Parameters(args): Parameters<SearchArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let args = self.as_agents_write(args);
        let outcome = off_thread(&self.session, context.ct, move |session, ct| {
            operation::search(session.scope(), &args).inspect(|found| {
                if !ct.is_cancelled() {
                    let mut views = session.views();
                    for file in &found.files {
                        views.hit(&file.path, &file.sha256);
                    }
                }
            })
        })
        .await?;
        answer(outcome, render::search)
    }

    #[tool(
        name = "write",
        output_schema = schema_for_output::<operation::WriteResult>(),
        description = "Write a whole file: create a new file (missing parent directories are created), or replace \
                       the content of a file you have read. The path must be declared writable by the task \
                       contract. Creating refuses a path that exists (TARGET_EXISTS); to overwrite, read the file \
                       first (its revision is then used) or pass expected_sha256. New files get mode 0644.",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn write(
        &self,
        Parameters(args): Parameters<WriteArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut args = self.as_agents_write(args);
        // A revision the model passed itself is its word that it knows the file; the one
        // filled in is as much as the session saw of it.
        args.seen = Seen::Whole;
        if args.expected_sha256.is_none()
            && let Some((sha, seen)) = self.session.base(&args.path)
        {
            if self.session.root.holds(&args.path) {
                args.expected_sha256 = Some(sha);
                args.seen = seen;
            } else {
                // Deleted by someone else since it was seen: a write creates it again.
                self.session.views().forget(&args.path);
            }
        }
        let outcome = off_thread(&self.session, context.ct, move |session, ct| {
            operation::write(session.scope(), &args).inspect(|written| {
                session.published(&written.path, Some(&written.sha256));
                if !ct.is_cancelled() {
                    session.views().wrote(&written.path, &written.sha256);
                }
            })
        })
        .await?;
        answer(outcome, render::write)
    }

    #[tool(
        name = "delete",
        output_schema = schema_for_output::<operation::DeleteResult>(),
        description = "Delete one file you have read (never a directory or a symbolic link). The path must be \
                       declared writable by the task contract; the revision of your last read is used unless \
                       you pass expected_sha256, and a file changed since is refused (REVISION_STALE).",
        annotations(
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn delete(
        &self,
        Parameters(args): Parameters<DeleteArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let mut args = self.as_agents_write(args);
        args.seen = Seen::Whole;
        if args.expected_sha256.is_none()
            && let Some((sha, seen)) = self.session.base(&args.path)
        {
            args.expected_sha256 = Some(sha);
            args.seen = seen;
        }
        let outcome = off_thread(&self.session, context.ct, move |session, _| {
            // Gone whether or not the client still listens.
            operation::delete(session.scope(), &args).inspect(|deleted| {
                session.published(&deleted.path, None);
                session.views().forget(&deleted.path);
            })
        })
        .await?;
        answer(outcome, |deleted| format!("Deleted {}.", deleted.path))
    }

    #[tool(
        name = "boundary",
        description = "What this session may do: the task, the fnmatch patterns of the files you may edit \
                       (`*` matches across `/`) and of the private paths you may not see, and the repository's \
                       current HEAD.",
        output_schema = schema_for_output::<BoundaryOutput>(),
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn boundary(
        &self,
        Parameters(_): Parameters<NoArgs>,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, ErrorData> {
        let head = off_thread(&self.session, context.ct, |session, _| {
            Git::at(session.root.path())
                .line(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])
                .ok()
        })
        .await?;
        let contract = &self.session.contract;
        let output = BoundaryOutput {
            contract_id: contract.id.clone(),
            task: contract.task.clone(),
            writable_paths: contract.writable_paths.clone(),
            private_paths: contract.private_paths.clone(),
            head,
            repository: self.session.root.path().display().to_string(),
        };
        let text = format!(
            "Task:\n{}\n\nWritable patterns: {}",
            output.task.trim_end(),
            output.writable_paths.join(", ")
        );
        structured(&output, text)
    }
}

/// What every session tells the client about satyrn's tools.
const INSTRUCTIONS: &str = "satyrn bounds this session to one task contract and one repository: find files with `list` \
     and `search`, read them with `read`, change the files the contract declares writable with \
     `edit`, `write` (also creates) and `delete`, and see the task and the patterns with `boundary`.";

/// Added under `satyrn-host confine`.
const CONFINED_INSTRUCTIONS: &str = "This session is confined by the kernel (satyrn-host confine): every other way of \
     writing the repository (the client's own edit, write and patch tools, shell redirections, sed -i, rm, \
     git commit, git stash) fails with EACCES or EPERM by design; do not retry such a write, use `edit`.";

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        let mut instructions = INSTRUCTIONS.to_owned();
        if self.session.confined {
            instructions.push(' ');
            instructions.push_str(CONFINED_INSTRUCTIONS);
        }
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("satyrn", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions)
    }
}
