//! Tests of `fallback.rs`: the chain against scripted models on tokio's
//! paused clock.

use super::*;
use futures_util::FutureExt;
use std::collections::VecDeque;

/// Scripted models: per model, its outcomes in order, and the calls it got.
struct Scripted {
    models: Vec<Mutex<VecDeque<Result<&'static str, ModelError>>>>,
    calls: Mutex<Vec<usize>>,
}

impl Scripted {
    fn new(scripts: Vec<Vec<Result<&'static str, ModelError>>>) -> Scripted {
        Scripted {
            models: scripts
                .into_iter()
                .map(|script| Mutex::new(script.into()))
                .collect(),
            calls: Mutex::new(Vec::new()),
        }
    }

    fn calls(&self) -> Vec<usize> {
        std::mem::take(&mut *self.calls.lock().unwrap())
    }
}

impl Transport for Scripted {
    fn len(&self) -> usize {
        self.models.len()
    }

    fn label(&self, target: usize) -> String {
        format!("fake/m{target}")
    }

    fn policy(&self, _: usize) -> RetryPolicy {
        RetryPolicy {
            max_retries: 1,
            first_delay: Duration::from_millis(10),
        }
    }

    fn send<'a>(
        &'a self,
        target: usize,
        on_text: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<Response, ModelError>> {
        self.calls.lock().unwrap().push(target);
        let next = self.models[target]
            .lock()
            .unwrap()
            .pop_front()
            .expect("a model was called more than scripted");
        let outcome = next.map(|text| {
            on_text(text);
            Response {
                text: text.into(),
                ..Response::default()
            }
        });
        async move { outcome }.boxed()
    }
}

fn state(models: usize) -> Mutex<ChainState> {
    Mutex::new(ChainState {
        cooling_until: vec![None; models],
        serving: 0,
    })
}

fn overloaded() -> Result<&'static str, ModelError> {
    Err(ModelError::Status {
        provider: "fake",
        status: 529,
        message: "Overloaded".into(),
        retry_after: None,
    })
}

/// One call; returns the answer's text or error, and the notes.
async fn call(
    transport: &Scripted,
    state: &Mutex<ChainState>,
) -> (Result<Response, ModelError>, Vec<String>) {
    let mut notes = Vec::new();
    let mut on_note = |news: CallNews| {
        if let CallNews::Switched(note) = news {
            notes.push(note);
        }
    };
    let result = run(transport, state, &mut |_| {}, &mut on_note).await;
    (result, notes)
}

#[tokio::test(start_paused = true)]
async fn a_model_that_keeps_failing_hands_over_to_the_next_with_a_note() {
    let transport = Scripted::new(vec![
        vec![overloaded(), overloaded()],
        vec![Ok("from the fallback"), Ok("again")],
    ]);
    let state = state(2);
    let (result, notes) = call(&transport, &state).await;
    let response = result.unwrap();
    assert_eq!(response.text, "from the fallback");
    assert_eq!(response.model, "fake/m1");
    assert_eq!(transport.calls(), [0, 0, 1]);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].starts_with("fake/m0 keeps failing (fake answered 529: Overloaded)"),
        "{notes:?}"
    );
    assert!(notes[0].contains("switching to fake/m1"), "{notes:?}");

    // Cooling down: the next call goes straight to the fallback, quietly.
    let (result, notes) = call(&transport, &state).await;
    assert_eq!(result.unwrap().text, "again");
    assert_eq!(transport.calls(), [1]);
    assert!(notes.is_empty(), "{notes:?}");
}

#[tokio::test(start_paused = true)]
async fn after_the_cool_down_the_configured_model_is_tried_again() {
    let transport = Scripted::new(vec![
        vec![overloaded(), overloaded(), Ok("back")],
        vec![Ok("fallback")],
    ]);
    let state = state(2);
    call(&transport, &state).await.0.unwrap();
    transport.calls();
    tokio::time::advance(COOL_DOWN).await;
    let (result, notes) = call(&transport, &state).await;
    assert_eq!(result.unwrap().model, "fake/m0");
    assert_eq!(transport.calls(), [0]);
    assert_eq!(notes, ["trying fake/m0 again after its cool-down"]);
}

#[tokio::test(start_paused = true)]
async fn when_every_model_fails_the_last_error_is_returned_and_all_cool_down() {
    let transport = Scripted::new(vec![
        vec![overloaded(), overloaded(), Ok("first again")],
        vec![overloaded(), overloaded()],
    ]);
    let state = state(2);
    let (result, notes) = call(&transport, &state).await;
    assert!(matches!(
        result,
        Err(ModelError::Status { status: 529, .. })
    ));
    assert_eq!(transport.calls(), [0, 0, 1, 1]);
    assert_eq!(notes.len(), 1);
    // Every model cooling down: they are all tried anyway, in order.
    let (result, _) = call(&transport, &state).await;
    assert_eq!(result.unwrap().text, "first again");
    assert_eq!(transport.calls(), [0]);
}

#[tokio::test(start_paused = true)]
async fn a_failure_the_user_must_fix_does_not_fall_back() {
    let refused = Err(ModelError::Auth {
        provider: "fake",
        status: 401,
        message: "invalid key".into(),
        hint: "check $KEY".into(),
    });
    let transport = Scripted::new(vec![vec![refused], vec![Ok("unused")]]);
    let state = state(2);
    let (result, notes) = call(&transport, &state).await;
    assert!(matches!(result, Err(ModelError::Auth { .. })));
    assert_eq!(transport.calls(), [0]);
    assert!(notes.is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_failure_after_output_does_not_fall_back() {
    struct Chatty;
    impl Transport for Chatty {
        fn len(&self) -> usize {
            2
        }
        fn label(&self, target: usize) -> String {
            format!("fake/m{target}")
        }
        fn policy(&self, _: usize) -> RetryPolicy {
            RetryPolicy {
                max_retries: 3,
                first_delay: Duration::from_millis(10),
            }
        }
        fn send<'a>(
            &'a self,
            target: usize,
            on_text: &'a mut (dyn FnMut(&str) + Send),
        ) -> BoxFuture<'a, Result<Response, ModelError>> {
            assert_eq!(target, 0, "no fallback after output");
            on_text("half an ans");
            async { Err(ModelError::Cut) }.boxed()
        }
    }
    let (result, notes) = {
        let mut notes = Vec::new();
        let mut streamed = String::new();
        let result = run(
            &Chatty,
            &state(2),
            &mut |text| streamed.push_str(text),
            &mut |note| notes.push(note),
        )
        .await;
        assert_eq!(streamed, "half an ans", "sent once, not repeated");
        (result, notes)
    };
    assert!(matches!(result, Err(ModelError::Cut)));
    assert!(notes.is_empty());
}
