//! The grammar as a table: operators, precedence, negation, quoting,
//! boxes across the antimeridian, radii in km and mi, sample determinism,
//! the validity rule and the columns of errors.

use super::*;
use crate::sample;

fn w(s: &str) -> Expr {
    Expr::Term(Term::Word(s.into()), 0)
}

/// The expression with every column zeroed, to compare shapes.
fn shape(e: Expr) -> Expr {
    match e {
        Expr::And(p) => Expr::And(p.into_iter().map(shape).collect()),
        Expr::Or(p) => Expr::Or(p.into_iter().map(shape).collect()),
        Expr::Not(i) => Expr::Not(Box::new(shape(*i))),
        Expr::Term(t, _) => Expr::Term(t, 0),
    }
}

fn parsed(v: &str) -> Expr {
    shape(parse_rule(v).unwrap_or_else(|e| panic!("{v}: {e:?}")))
}

#[test]
fn and_binds_tighter_than_or_and_parentheses_group() {
    assert_eq!(parsed("a b"), Expr::And(vec![w("a"), w("b")]));
    assert_eq!(
        parsed("a OR b c"),
        Expr::Or(vec![w("a"), Expr::And(vec![w("b"), w("c")])])
    );
    assert_eq!(
        parsed("(a OR b) c"),
        Expr::And(vec![Expr::Or(vec![w("a"), w("b")]), w("c")])
    );
    // `or` in lower case is a word.
    assert_eq!(parsed("a or b"), Expr::And(vec![w("a"), w("or"), w("b")]));
    assert_eq!(
        parsed("-(a OR b)"),
        Expr::Not(Box::new(Expr::Or(vec![w("a"), w("b")])))
    );
    assert_eq!(
        parsed("x -\"big deal\""),
        Expr::And(vec![
            w("x"),
            Expr::Not(Box::new(Expr::Term(
                Term::Phrase(vec!["big".into(), "deal".into()]),
                0
            )))
        ])
    );
}

#[test]
fn every_operator_parses_ignoring_case_where_the_contract_says() {
    let cases: Vec<(&str, Term)> = vec![
        ("Rust", Term::Word("rust".into())),
        ("e-mail", Term::Phrase(vec!["e".into(), "mail".into()])),
        ("#Rust", Term::Hashtag("rust".into())),
        ("@Ada_1", Term::Mention("ada_1".into())),
        ("from:42", Term::From(UserRef::Id(42))),
        ("FROM:Ada", Term::From(UserRef::Login("ada".into()))),
        ("to:ada", Term::To(UserRef::Login("ada".into()))),
        ("repost_of:7", Term::RepostOf(UserRef::Id(7))),
        ("is:REPLY", Term::IsReply),
        ("is:repost", Term::IsRepost),
        ("has:Geo", Term::HasGeo),
        ("has:hashtags", Term::HasHashtags),
        ("has:mentions", Term::HasMentions),
        ("sample:100", Term::Sample(100)),
        (
            "point_radius:[2.35 48.85 25mi]",
            Term::PointRadius {
                lon: 2.35,
                lat: 48.85,
                km: 25.0 * KM_PER_MILE,
            },
        ),
        (
            "point_radius:[0 0 40.2336km]",
            Term::PointRadius {
                lon: 0.0,
                lat: 0.0,
                km: 40.2336,
            },
        ),
    ];
    for (v, t) in cases {
        assert_eq!(parsed(v), Expr::Term(t, 0), "{v}");
    }
    match parsed("bounding_box:[170 -10 -170 10]") {
        Expr::Term(Term::BoundingBox(b), _) => assert!(b.crosses_antimeridian()),
        other => panic!("{other:?}"),
    }
}

/// The error column for a value, or `None` when it is accepted.
fn column(v: &str) -> Option<usize> {
    check_rule(v).err().map(|e| e.column)
}

#[test]
fn errors_name_the_column_of_the_token_at_fault() {
    for (v, col) in [
        ("a nope:x", 3),
        ("a from:not-a-login", 3),
        ("is:quoted a", 1),
        ("a has:pictures", 3),
        ("a sample:0", 3),
        ("a sample:101", 3),
        ("a bounding_box:[1 2 3]", 3),
        ("a bounding_box:[0 10 5 5]", 3),
        ("a bounding_box:[1 2 3 4", 3),
        ("a point_radius:[0 0 26mi]", 3),
        ("a point_radius:[0 0 0km]", 3),
        ("a point_radius:[0 0 5]", 3),
        ("a (b c", 3),
        ("a \"b c", 3),
        ("a OR", 3),
        ("OR a", 1),
        ("a OR OR b", 3),
        ("a -", 3),
        ("a - b", 3),
        ("a )", 3),
        ("a ()", 3),
        ("a #", 3),
        ("a \"!!\"", 3),
        ("a ---", 3),
        ("", 1),
        ("-a", 1),
        ("is:reply", 1),
        ("has:geo sample:5", 1),
        ("a OR -b", 1),
        ("-(a b)", 1),
    ] {
        assert_eq!(column(v), Some(col), "{v:?}");
    }
    // Columns count characters, not bytes.
    assert_eq!(column("école nope:x"), Some(7));
    let long = "a".repeat(MAX_RULE_CHARS + 1);
    assert_eq!(column(&long), Some(1025));
    assert_eq!(column(&"a".repeat(MAX_RULE_CHARS)), None);
}

#[test]
fn anchors_decide_validity() {
    for v in [
        "a -b",
        "is:reply a",
        "-is:reply from:u",
        "-(a b) c",
        "(a OR from:3) -is:repost",
        "bounding_box:[0 0 1 1] has:geo",
        "point_radius:[0 0 1km]",
        "#tag OR @login",
        "\"exact phrase\" sample:10",
    ] {
        assert_eq!(column(v), None, "{v}");
    }
}

fn status(message: &str) -> RuleStatus {
    RuleStatus {
        id: 1,
        uid: 10,
        message: message.into(),
        ..RuleStatus::default()
    }
}

fn holds(v: &str, s: &RuleStatus) -> bool {
    check_rule(v)
        .unwrap_or_else(|e| panic!("{v}: {e:?}"))
        .matches(s)
}

#[test]
fn words_phrases_tags_and_mentions_match_as_the_contract_says() {
    let mut s = status("Shipping #Rust 1.80 to @ada, e-mail me: big DEAL");
    s.hashtags = vec!["rust".into()];
    s.mentions = vec!["ada".into()];
    for (v, want) in [
        ("rust", true),
        ("shipping", true),
        ("ship", false),
        ("ada", true),
        ("#rust", true),
        ("#shipping", false),
        ("@ada", true),
        ("@bob", false),
        ("\"big deal\"", true),
        ("\"deal big\"", false),
        ("\"rust 1 80\"", true),
        ("e-mail", true),
        ("mail-e", false),
        ("rust -ada", false),
        ("rust -(bob OR carol)", true),
        ("bob OR carol OR deal", true),
        ("has:hashtags has:mentions rust", true),
        ("rust -has:geo", true),
        ("rust is:reply", false),
    ] {
        assert_eq!(holds(v, &s), want, "{v}");
    }
}

#[test]
fn users_replies_reposts_and_their_negations() {
    let mut reply = status("sure");
    reply.is_reply = true;
    reply.reply_to_uid = Some(7);
    let mut repost = status("");
    repost.repost_of_uid = Some(7);
    for (v, s, want) in [
        ("from:10", &reply, true),
        ("from:11", &reply, false),
        ("to:7", &reply, true),
        ("to:7 is:reply", &reply, true),
        ("to:7 -is:reply", &reply, false),
        ("repost_of:7 is:repost", &repost, true),
        ("from:10 -is:repost", &repost, false),
        // A repost never matches the words of what it reposts.
        ("sure", &repost, false),
        // v1.1's follow=7.
        ("from:7 OR to:7 OR repost_of:7", &repost, true),
        ("from:7 OR to:7 OR repost_of:7", &reply, true),
        // An unresolved login names no one.
        ("from:ada", &reply, false),
    ] {
        assert_eq!(holds(v, s), want, "{v}");
    }
    let mut e = check_rule("from:Ada OR @bob").unwrap();
    assert_eq!(
        e.logins(),
        vec![("ada".to_string(), 1), ("bob".to_string(), 13)]
    );
    let find = |l: &str| (l == "ada").then_some(10);
    assert_eq!(e.resolve(&find).unwrap_err().column, 13);
    let mut e = check_rule("from:Ada").unwrap();
    e.resolve(&find).unwrap();
    assert!(e.matches(&reply));
}

#[test]
fn boxes_cross_the_antimeridian_and_radii_measure_great_circles() {
    let at = |lat: f64, lon: f64| RuleStatus {
        coords: Some((lat, lon)),
        ..status("x")
    };
    for (v, s, want) in [
        ("bounding_box:[170 -10 -170 10]", at(0.0, 175.0), true),
        ("bounding_box:[170 -10 -170 10]", at(0.0, -175.0), true),
        ("bounding_box:[170 -10 -170 10]", at(0.0, 0.0), false),
        ("bounding_box:[0 0 1 1]", at(1.0, 1.0), true),
        ("bounding_box:[0 0 1 1]", status("x"), false),
        // Paris to Versailles is about 17.9 km, 11.1 mi.
        (
            "point_radius:[2.3522 48.8566 20km]",
            at(48.8049, 2.1204),
            true,
        ),
        (
            "point_radius:[2.3522 48.8566 15km]",
            at(48.8049, 2.1204),
            false,
        ),
        (
            "point_radius:[2.3522 48.8566 12mi]",
            at(48.8049, 2.1204),
            true,
        ),
        (
            "point_radius:[2.3522 48.8566 10mi]",
            at(48.8049, 2.1204),
            false,
        ),
        // Across the antimeridian too.
        ("point_radius:[179.9 0 40km]", at(0.0, -179.9), true),
    ] {
        assert_eq!(holds(v, &s), want, "{v} {:?}", s.coords);
    }
}

#[test]
fn sample_keeps_what_the_sample_stream_keeps_and_nests() {
    for id in 0..5000u64 {
        let s = RuleStatus { id, ..status("x") };
        let small = holds("x sample:5", &s);
        let large = holds("x sample:50", &s);
        assert_eq!(small, sample::hit(id, sample::threshold(0.05)), "{id}");
        assert!(
            !small || large,
            "sample:5 keeps a subset of sample:50 ({id})"
        );
    }
}

/// A small deterministic generator (xorshift64*), so the property test
/// needs no dependency and always draws the same cases.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len() as u64) as usize]
    }
}

const VOCAB: [&str; 6] = ["apple", "berry", "cherry", "date", "elder", "fig"];

/// A random rule value, anchored or not, within the grammar.
fn random_rule(g: &mut Gen, depth: u32) -> String {
    let leaf = |g: &mut Gen| -> String {
        match g.below(14) {
            0..=3 => g.pick(&VOCAB).to_string(),
            4 => format!("\"{} {}\"", g.pick(&VOCAB), g.pick(&VOCAB)),
            5 => format!("#{}", g.pick(&VOCAB)),
            6 => format!("@{}", g.pick(&VOCAB)),
            7 => format!("from:{}", 1 + g.below(4)),
            8 => format!("to:{}", 1 + g.below(4)),
            9 => format!("repost_of:{}", 1 + g.below(4)),
            10 => g
                .pick(&[
                    "is:reply",
                    "is:repost",
                    "has:geo",
                    "has:hashtags",
                    "has:mentions",
                ])
                .to_string(),
            11 => g
                .pick(&[
                    "bounding_box:[0 0 10 10]",
                    "bounding_box:[170 -5 -170 5]",
                    "bounding_box:[-5 40 5 50]",
                ])
                .to_string(),
            12 => g
                .pick(&[
                    "point_radius:[2 45 25mi]",
                    "point_radius:[179.9 0 40km]",
                    "point_radius:[5 5 100km]",
                ])
                .to_string(),
            _ => format!("sample:{}", 1 + g.below(100)),
        }
    };
    if depth == 0 || g.below(3) == 0 {
        return leaf(g);
    }
    let n = 2 + g.below(2);
    let parts: Vec<String> = (0..n)
        .map(|_| {
            let p = random_rule(g, depth - 1);
            if g.below(4) == 0 {
                format!("-({p})")
            } else {
                format!("({p})")
            }
        })
        .collect();
    if g.below(2) == 0 {
        parts.join(" ")
    } else {
        parts.join(" OR ")
    }
}

fn random_status(g: &mut Gen, id: u64) -> RuleStatus {
    let repost = g.below(6) == 0;
    let mut words = Vec::new();
    if !repost {
        for _ in 0..1 + g.below(5) {
            let w = g.pick(&VOCAB);
            words.push(match g.below(6) {
                0 => format!("#{w}"),
                1 => format!("@{w}"),
                _ => w.to_string(),
            });
        }
    }
    let message = words.join(" ");
    let hashtags = words
        .iter()
        .filter_map(|w| w.strip_prefix('#').map(str::to_string))
        .collect();
    let mentions = words
        .iter()
        .filter_map(|w| w.strip_prefix('@').map(str::to_string))
        .collect();
    let is_reply = !repost && g.below(3) == 0;
    let coords = match g.below(5) {
        0 => Some((g.below(10) as f64 + 0.5, g.below(10) as f64 + 0.5)),
        1 => Some((
            g.below(10) as f64 - 5.0,
            179.0 + g.below(20) as f64 / 10.0 - if g.below(2) == 0 { 358.0 } else { 0.0 },
        )),
        2 => Some((
            45.0 + g.below(100) as f64 / 100.0,
            2.0 + g.below(100) as f64 / 100.0,
        )),
        _ => None,
    };
    RuleStatus {
        id,
        uid: 1 + g.below(4),
        message,
        hashtags,
        mentions,
        is_reply,
        reply_to_uid: is_reply.then(|| 1 + g.below(4)),
        repost_of_uid: repost.then(|| 1 + g.below(4)),
        coords,
    }
}

#[test]
fn the_index_answers_what_every_rule_checked_alone_answers() {
    let mut g = Gen(0x9e37_79b9_7f4a_7c15);
    let mut index: RuleIndex<usize> = RuleIndex::default();
    let mut rules = Vec::new();
    while rules.len() < 400 {
        let v = random_rule(&mut g, 3);
        let Ok(e) = check_rule(&v) else { continue };
        assert!(index.insert(rules.len(), e.clone()), "{v}");
        rules.push((v, e));
    }
    // Take a few out again: they must not come back.
    for k in [3usize, 50, 399] {
        index.remove(k);
    }
    let mut hits = 0;
    for id in 0..3000u64 {
        let s = random_status(&mut g, id);
        let mut got = Vec::new();
        index.route(&s, &mut got);
        got.sort_unstable();
        let want: Vec<usize> = rules
            .iter()
            .enumerate()
            .filter(|(k, (_, e))| ![3, 50, 399].contains(k) && e.matches(&s))
            .map(|(k, _)| k)
            .collect();
        assert_eq!(got, want, "status {s:?}");
        hits += want.len();
    }
    assert!(
        hits > 1000,
        "the cases match too rarely to test anything: {hits}"
    );
    // Unanchored rules are refused by the index too.
    assert!(!index.insert(1000, parse_rule("-apple").unwrap()));
}
