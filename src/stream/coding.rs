//! How a plain body is encoded (`Content-Encoding`), chosen from what the
//! client accepts.

/// How a plain body is encoded (`Content-Encoding`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Coding {
    /// As it is.
    Identity,
    /// gzip: shared deflated pieces.
    Gzip,
    /// zstd: one frame of the connection's own, flushed after every output.
    Zstd,
}

/// The coding of a plain stream whose client sent these `Accept-Encoding`
/// values, and what to fall back to when zstd is chosen but no zstd body
/// may open: zstd when it ranks above gzip (named alone, or with a higher
/// quality), gzip when taken (it costs the server less: its pieces are
/// shared), else none.
pub(crate) fn plain_coding(values: &[&str]) -> (Coding, Coding) {
    let gzip = super::deflate::quality(values.iter().copied(), &["gzip", "x-gzip"]);
    let zstd = super::deflate::quality(values.iter().copied(), &["zstd"]);
    let fallback = match gzip > 0.0 {
        true => Coding::Gzip,
        false => Coding::Identity,
    };
    if zstd > 0.0 && zstd > gzip {
        (Coding::Zstd, fallback)
    } else {
        (fallback, fallback)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zstd_is_chosen_when_it_ranks_above_gzip() {
        let coding = |v: &str| plain_coding(&[v]).0;
        assert_eq!(coding("zstd"), Coding::Zstd);
        assert_eq!(coding("gzip;q=0.5, zstd"), Coding::Zstd);
        assert_eq!(coding("gzip, deflate, br, zstd"), Coding::Gzip);
        assert_eq!(coding("zstd;q=0, gzip"), Coding::Gzip);
        assert_eq!(coding("zstd;q=0"), Coding::Identity);
        assert_eq!(coding("*"), Coding::Gzip);
        assert_eq!(coding("identity"), Coding::Identity);
        assert_eq!(plain_coding(&["zstd, gzip;q=0.5"]).1, Coding::Gzip);
        assert_eq!(plain_coding(&["zstd"]).1, Coding::Identity);
    }
}
