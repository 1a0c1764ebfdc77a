//! Every route of the Mastodon API with what its OpenAPI document says of
//! it, side by side: the router, the document and the gate that holds
//! requests to it (`schema::gate`) are all made from [`table`], so no route
//! is served undocumented, nor takes what its document refuses.

mod build;
mod reading;
mod signing_in;

pub(crate) use build::Route;

/// Every route.
/// Every route.
pub(super) fn table() -> Vec<Route> {
    let mut all = signing_in::routes();
    all.extend(reading::routes());
    all
}
