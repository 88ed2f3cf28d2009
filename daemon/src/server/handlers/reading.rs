//! Frames that read without changing anything: `history`, `status`, `stats`, `mcp`.

use super::{Answer, Context};
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
    let budget = Some(hearth_protocol::BudgetUse {
        today_usd: spent.today,
        month_usd: spent.month,
        daily_usd: context.shared.budget.daily_usd,
        monthly_usd: context.shared.budget.monthly_usd,
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
        .map_or(-1, |(turn, _)| turn.taken_through as i64);
    let waiting = shared.log.waiting(agent, taken_after).await?.len() as u64;
    let status = Status {
        agent: agent.to_string(),
        busy: context.handle.is_busy(),
        last_id: next_id.checked_sub(1),
        waiting,
        model: shared.model.clone(),
        clients: shared.clients.load(Ordering::Relaxed),
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
        mcp_calls: crate::mcp::running_calls(&shared.mcp),
        activity: None,
        memory: None,
        database_bytes: None,
        bridges: Vec::new(),
    };
    Ok(ServerFrame::Status(status))
}

/// `mcp`: every MCP server, its state, tools and last error.
pub fn mcp(context: &Context<'_>) -> ServerFrame {
    ServerFrame::Mcp {
        servers: crate::mcp::frame(&context.shared.mcp),
    }
}
