//! The Lua scripts, each named once: `lua/<name>.lua`, whose header says
//! why it is atomic and which keys it touches.

use redis::Script;

/// Names each Lua script once: a field of [`Scripts`] loaded from
/// `lua/<name>.lua`.
macro_rules! scripts {
    ($($name:ident),* $(,)?) => {
        /// The Lua scripts, loaded once.
        #[derive(Debug)]
        pub struct Scripts {
            $(pub(crate) $name: Script,)*
        }

        impl Scripts {
            pub(crate) fn load() -> Self {
                Scripts {
                    $($name: Script::new(include_str!(concat!("../lua/", stringify!($name), ".lua"))),)*
                }
            }
        }
    };
}

scripts!(
    op_begin,
    emit_once,
    op_retire,
    name_claim,
    name_release,
    status_put,
    author_post,
    author_delete,
    replies_count,
    trend,
    repost_claim,
    delete_mark,
    status_bury,
    emit,
    follow_source,
    follow_target,
    follow_home,
    drop_sessions,
    session_end,
    record_view,
    fanout_page,
    fanout_ack,
    outbox_claim,
    like,
    stream_lease,
    home_ids,
    lease_renew,
    page_from,
    ids_up_to,
    lease_release,
    relate,
    home_hide,
    home_unhide,
    request_add,
    conv_send,
    direct_claim,
    conv_leave,
    group_create,
    user_suspend,
    report_add,
    report_resolve,
    audit_add,
    group_member,
    conv_read,
    undo_take,
    status_login,
    rules_add,
    bookmark_add,
    list_create,
    zstd_dict_put,
    emit_many,
    notify_read,
    status_edit,
    list_title,
    list_drop,
    list_members,
    rules_delete,
    rate_take,
    like_whole,
    follow_whole,
    post_whole,
);
