//! Frames about schedules: `schedule_add`, `schedule_list`, `schedule_cancel`.

use super::{Answer, Context, Refusal};
use crate::schedule::{Schedule, When};
use hearth_protocol::{ScheduleInfo, ServerFrame};

/// `schedule_add`: adds a schedule and wakes the agent to arm it.
pub async fn add(context: &Context<'_>, when: String, text: String) -> Answer {
    if text.trim().is_empty() {
        return Err(Refusal::refused("the schedule's text is empty").into());
    }
    let when =
        When::parse(&when, chrono::Utc::now()).map_err(|err| Refusal::refused(err.to_string()))?;
    // A disk that cannot take it is a `storage` error; the connection stays.
    let schedule = context
        .shared
        .log
        .add_schedule(context.agent(), when, &text, None)
        .await
        .map_err(|err| {
            tracing::error!("cannot store a schedule: {err}");
            Refusal::storage(format!("the schedule was not stored: {err}"))
        })?;
    context.handle.wake();
    Ok(schedules(vec![schedule]))
}

/// `schedule_list`: the active schedules, soonest first.
pub async fn list(context: &Context<'_>) -> Answer {
    let list = context.shared.log.schedules(context.agent()).await?;
    Ok(schedules(list))
}

/// `schedule_cancel`: cancels an active schedule; answers with it.
pub async fn cancel(context: &Context<'_>, id: i64) -> Answer {
    let log = &context.shared.log;
    let before = log.schedules(context.agent()).await?;
    let cancelled = log
        .cancel_schedule(context.agent(), id)
        .await
        .map_err(|err| {
            tracing::error!("cannot cancel a schedule: {err}");
            Refusal::storage(format!("schedule #{id} was not cancelled: {err}"))
        })?;
    if cancelled {
        let cancelled = before.into_iter().filter(|s| s.id == id).collect();
        Ok(schedules(cancelled))
    } else {
        Err(Refusal::refused(format!("there is no active schedule #{id}")).into())
    }
}

fn schedules(list: Vec<Schedule>) -> ServerFrame {
    ServerFrame::Schedules {
        schedules: list
            .into_iter()
            .map(|s| ScheduleInfo {
                id: s.id,
                when: s.when,
                // A schedule made in a tainted turn says so where it is listed.
                text: crate::provenance::marked(s.text, s.untrusted.is_some()),
                next: s.next,
            })
            .collect(),
    }
}
