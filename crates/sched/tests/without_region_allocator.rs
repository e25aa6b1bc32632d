//! A program that does not allocate through the region allocator cannot be preempted by signals
//! (a signal could pause a transaction inside malloc and deadlock the worker): the configuration
//! is refused with a message saying what to add, and polling still works.

use overtake_runtime::preempt::Unavailable;
use overtake_sched::{Delivery, Policy, SchedConfig, SchedError};

#[test]
fn signal_delivery_is_refused_with_a_clear_message() {
    let config = SchedConfig::default()
        .policy(Policy::Preempt)
        .delivery(Delivery::Signal);
    let err = config.validate().expect_err("refused");
    assert!(
        matches!(err, SchedError::Unavailable(Unavailable::NoRegionAllocator)),
        "{err}"
    );
    assert!(err.to_string().contains("#[global_allocator]"), "{err}");
    // What `unwrap()` shows says it too.
    assert!(
        format!("{err:?}").contains("#[global_allocator]"),
        "{err:?}"
    );
    let poll = config.delivery(Delivery::Poll);
    assert!(poll.validate().is_ok());
}
