//! Frames that read without changing anything: `history`, `status`, `stats`, `mcp`.

use super::{Answer, Context};
use crate::usage::UsageLog;
use hearth_protocol::{AgentStatus, ServerFrame, Status};
use std::sync::atomic::Ordering;

/// `history`: a page of messages before an id, newest last.
pub async fn history(context: &Context<'_>, before: Option<u64>, limit: Option<u32>) -> Answer {
    let limit = limit.unwrap_or(50).clamp(1, 1000);
    let messages = context
        .shared
        .log
        .page(context.agent(), before, limit)
        .await?;
    Ok(ServerFrame::History { messages })
}

/// `stats`: tokens and cost per day and model over the last `days`.
pub async fn stats(context: &Context<'_>, days: Option<u32>) -> Answer {
    let days = days.unwrap_or(7).clamp(1, 3660);
    let today = chrono::Local::now().date_naive();
    let since = crate::usage::window_start(today, days);
    let rows = context.shared.log.usage_stats(since).await?;
    let spent = context.shared.log.spending(today).await?;
    // The limits now, as a reload left them.
    let limits = context.shared.meter.budget();
    let budget = Some(hearth_protocol::BudgetUse {
        today_usd: spent.today,
        month_usd: spent.month,
        daily_usd: limits.daily_usd,
        monthly_usd: limits.monthly_usd,
    });
    Ok(ServerFrame::Stats { days, rows, budget })
}

/// `status`: the daemon and the agent this client follows, now.
pub async fn status(context: &Context<'_>) -> Answer {
    let shared = context.shared;
    let agent = context.agent();
    let next_id = shared.log.next_id(agent).await?;
    let taken_after = shared
        .log
        .last_turn(agent)
        .await?
        .map(|(turn, _)| turn.taken_through);
    let waiting = shared.log.waiting(agent, taken_after).await?.len() as u64;
    let status = Status {
        agent: agent.to_string(),
        busy: context.handle.is_busy(),
        last_id: next_id.checked_sub(1),
        waiting,
        model: context
            .handle
            .settings()
            .model
            .as_ref()
            .map(crate::model::Model::label),
        // The one who asks is attached too; it is not counted.
        clients: shared.clients.load(Ordering::SeqCst).saturating_sub(1),
        pid: std::process::id(),
        version: env!("CARGO_PKG_VERSION").to_string(),
        uptime_secs: shared.started.elapsed().as_secs(),
        agents: std::iter::once(&shared.agent)
            .chain(
                shared
                    .agents
                    .values()
                    .filter(|h| h.name != shared.agent.name),
            )
            .map(|h| AgentStatus {
                name: h.name.clone(),
                busy: h.is_busy(),
            })
            .collect(),
        next_schedule: shared
            .log
            .schedules(agent)
            .await?
            .first()
            .map(|s| format!("{} {}", s.next, s.text)),
        cost_today_usd: Some(
            shared
                .log
                .spending(chrono::Local::now().date_naive())
                .await?
                .today,
        ),
        mcp_calls: crate::tools::mcp::running_calls(&shared.mcp),
        mcp_servers: crate::tools::mcp::frame(&shared.mcp),
        activity: Some(context.handle.activity.current()),
        memory: Some(memory_status(context.handle)),
        database_bytes: Some(database_bytes(&shared.database)),
        bridges: bridges(shared).await?,
        confinement: Some(crate::tools::confine::describe()),
        queued_bytes: Some(crate::server::queued_bytes()),
        chain: Some(shared.log.chain_state()),
        plan: crate::model::chatgpt::limits::last(),
        window: crate::model::served::warning(),
    };
    Ok(ServerFrame::Status(Box::new(status)))
}

/// Each bridge as its supervisor sees it; one that runs but cannot work
/// (a Telegram bot whose webhook blocks polling) with what it said keeps
/// it from working.
async fn bridges(
    shared: &crate::server::shared::Shared,
) -> Result<Vec<hearth_protocol::BridgeStatus>, crate::log::LogError> {
    let mut bridges = shared.bridges.all();
    for bridge in &mut bridges {
        if bridge.error.is_some() {
            continue;
        }
        let problem = shared
            .log
            .get_state(&hearth_protocol::problem_state(&bridge.name))
            .await?;
        bridge.error = problem.filter(|problem| !problem.trim().is_empty());
    }
    Ok(bridges)
}

fn memory_status(handle: &crate::turn::AgentHandle) -> hearth_protocol::MemoryStatus {
    let gauge = handle.memory.gauge();
    hearth_protocol::MemoryStatus {
        lines: gauge.lines,
        bytes: gauge.bytes,
        high_budget: gauge.high_budget,
        pending: gauge.pending,
        model: handle.memory.own_model(),
    }
}

/// The database's size on disk: the file and its write-ahead log.
fn database_bytes(database: &std::path::Path) -> u64 {
    let size = |path: &std::path::Path| std::fs::metadata(path).map_or(0, |meta| meta.len());
    let mut wal = database.as_os_str().to_owned();
    wal.push("-wal");
    size(database) + size(std::path::Path::new(&wal))
}

/// `mcp`: every MCP server, its state, tools and last error.
pub fn mcp(context: &Context<'_>) -> ServerFrame {
    ServerFrame::Mcp {
        servers: crate::tools::mcp::frame(&context.shared.mcp),
    }
}
