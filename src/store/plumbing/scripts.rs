//! The Lua scripts, each named once, each a `lua/<name>.lua` file beside
//! its callers' section (`entities/lua/` the entities', `outbox/lua/`,
//! `chains/lua/`, `fanout/lua/`, `writes/lua/`), whose header says why it is
//! atomic and which keys it touches.

use redis::Script;

/// Names each Lua script once, under the section folder it lies in (`""`:
/// the store's own): a field of [`Scripts`] loaded from
/// `<section>/lua/<name>.lua`.
macro_rules! scripts {
    ($($dir:literal => [$($name:ident),* $(,)?]),* $(,)?) => {
        /// The Lua scripts, loaded once.
        #[derive(Debug)]
        pub struct Scripts {
            $($(pub(crate) $name: Script,)*)*
        }

        impl Scripts {
            pub(crate) fn load() -> Self {
                Scripts {
                    $($($name: with_helpers(include_str!(concat!(
                        "../", $dir, "lua/", stringify!($name), ".lua"
                    ))),)*)*
                }
            }
        }
    };
}

/// A script with the shared functions it calls prepended: `log_append`
/// (`writes/lua/log_append.lua`, the event log's ids and floors) and
/// `log_lost` (`writes/lua/log_lost.lua`, what a shard's buffer lost).
fn with_helpers(source: &str) -> Script {
    let mut full = String::new();
    for (name, helper) in [
        ("log_append(", include_str!("../writes/lua/log_append.lua")),
        ("log_lost(", include_str!("../writes/lua/log_lost.lua")),
    ] {
        if source.contains(name) {
            full.push_str(helper);
        }
    }
    full.push_str(source);
    Script::new(&full)
}

scripts! {
    // The entities'.
    "entities/" => [
        name_claim,
        name_release,
        drop_sessions,
        log_read,
        log_probe,
        session_end,
        record_view,
        stream_lease,
        home_ids,
        page_from,
        ids_up_to,
        conv_leave,
        group_create,
        report_add,
        report_resolve,
        audit_add,
        group_member,
        conv_read,
        rules_add,
        bookmark_add,
        list_create,
        zstd_dict_put,
        notify_read,
        list_title,
        list_drop,
        list_members,
        rules_delete,
        rate_take,
        work_marks,
    ],
    "outbox/" => [
        op_begin,
        op_retire,
        outbox_claim,
    ],
    "chains/" => [
        status_put,
        author_post,
        author_delete,
        replies_count,
        trend,
        repost_claim,
        delete_mark,
        status_bury,
        follow_source,
        like,
        relate,
        home_hide,
        home_unhide,
        request_add,
        conv_send,
        direct_claim,
        user_suspend,
        undo_take,
        status_login,
        status_edit,
        like_whole,
        follow_whole,
        post_whole,
    ],
    "fanout/" => [
        follow_target,
        follow_home,
        fanout_page,
        fanout_ack,
    ],
    "writes/" => [
        emit_once,
        lease_renew,
        lease_release,
    ],
}
