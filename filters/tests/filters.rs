//! Table tests for parsing, track semantics, boxes and routing.

use firehose_filters::{parse_filter, parse_rate, BBox, Event, Index, Phrase, Rule, StatusView};

/// Parses the three parameters; `Ok(summary)` or `Err(param)`.
fn parse(follow: Option<&str>, track: Option<&str>, loc: Option<&str>) -> Result<String, String> {
    parse_filter(follow, track, loc)
        .map(|s| format!("{}/{}/{}", s.follow.len(), s.track.len(), s.locations.len()))
        .map_err(|e| e.param.to_string())
}

fn check<I: std::fmt::Debug, O: PartialEq + std::fmt::Debug>(
    cases: &[(I, O)],
    mut f: impl FnMut(&I) -> O,
) {
    for (input, expected) in cases {
        assert_eq!(&f(input), expected, "input: {input:?}");
    }
}

#[test]
fn parse_accepts_valid_and_names_the_bad_parameter() {
    let long = "x".repeat(61);
    let many_ids = (1..=5001)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let max_ids = (1..=5000)
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(",");
    let many_phrases = (0..401)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let many_boxes = vec!["0,0,1,1"; 26].join(",");
    let max_boxes = vec!["0,0,1,1"; 25].join(",");
    let ok = |s: &str| Ok(s.to_string());
    let err = |s: &str| Err(s.to_string());
    check(
        &[
            ((Some("1,2, 3"), None, None), ok("3/0/0")),
            ((Some("2,2"), None, None), ok("1/0/0")),
            ((None, Some("rust,hello world"), None), ok("0/2/0")),
            ((None, None, Some("-122.75,36.8,-121.75,37.8")), ok("0/0/1")),
            ((Some("1"), Some("a"), Some("0,0,1,1,2,2,3,3")), ok("1/1/2")),
            ((Some(max_ids.as_str()), None, None), ok("5000/0/0")),
            ((None, None, Some(max_boxes.as_str())), ok("0/0/25")),
            ((None, None, None), err("follow")),
            ((Some(""), Some(" "), None), err("follow")),
            ((Some("abc"), None, None), err("follow")),
            ((Some("0"), None, None), err("follow")),
            ((Some("-4"), None, None), err("follow")),
            ((Some("1,,2"), None, None), err("follow")),
            ((Some(many_ids.as_str()), None, None), err("follow")),
            ((None, Some(long.as_str()), None), err("track")),
            ((None, Some("!!!"), None), err("track")),
            ((None, Some(many_phrases.as_str()), None), err("track")),
            ((None, None, Some("1,2,3")), err("locations")),
            ((None, None, Some("a,b,c,d")), err("locations")),
            ((None, None, Some("0,91,1,92")), err("locations")),
            ((None, None, Some("-181,0,1,1")), err("locations")),
            ((None, None, Some("0,10,1,5")), err("locations")),
            ((None, None, Some(many_boxes.as_str())), err("locations")),
        ],
        |(f, t, l)| parse(*f, *t, *l),
    );
}

#[test]
fn rate_must_be_in_zero_to_one() {
    check(
        &[
            (None, Ok(0.01)),
            (Some("0.5"), Ok(0.5)),
            (Some("1"), Ok(1.0)),
            (Some("0"), Err("rate")),
            (Some("1.5"), Err("rate")),
            (Some("x"), Err("rate")),
            (Some("NaN"), Err("rate")),
        ],
        |r| parse_rate(*r).map_err(|e| e.param),
    );
}

#[test]
fn track_phrases_match_whole_words_ignoring_case() {
    let mut words = firehose_filters::track::Words::default();
    check(
        &[
            (("rust", "I love Rust!"), true),
            (("rust", "I love rustaceans"), false),
            (("rust", "#rust is great"), true),
            (("rust", "ping @rust please"), true),
            (("#rust", "#rust is great"), true),
            (("#rust", "rust is great"), false),
            (("@rust", "#rust is great"), false),
            (("@rust", "hi @Rust"), true),
            (("hello world", "world, hello!"), true),
            (("hello world", "hello there"), false),
            (("ÉCOLE", "à l'école"), true),
            (("Ωmega", "ωMEGA rules"), true),
            (("don't", "I don't know"), true),
            (("rust-lang", "rust lang"), true),
            (("café", "cafe"), false),
            (("big_data", "big data"), false),
            (("big_data", "we like big_data."), true),
            (("42", "the answer is 42."), true),
        ],
        |(phrase, message)| {
            words.fill(message);
            Phrase::new(phrase).expect("phrase").matches(&words)
        },
    );
}

#[test]
fn boxes_include_edges_and_cross_the_antimeridian_when_west_exceeds_east() {
    let sf = BBox::new(-122.75, 36.8, -121.75, 37.8).unwrap();
    let fiji = BBox::new(170.0, -20.0, -170.0, -10.0).unwrap();
    check(
        &[
            ((sf, 37.0, -122.0), true),
            ((sf, 36.8, -122.75), true),
            ((sf, 37.8, -121.75), true),
            ((sf, 37.81, -122.0), false),
            ((sf, 37.0, -121.7), false),
            ((fiji, -15.0, 178.0), true),
            ((fiji, -15.0, -175.0), true),
            ((fiji, -15.0, 180.0), true),
            ((fiji, -15.0, -180.0), true),
            ((fiji, -15.0, 0.0), false),
            ((fiji, -9.0, 178.0), false),
        ],
        |(b, lat, lon)| b.contains(*lat, *lon),
    );
}

fn status(id: u64, uid: u64, message: &str, coords: Option<(f64, f64)>) -> StatusView<'_> {
    StatusView {
        id,
        uid,
        message,
        coords,
        ..StatusView::default()
    }
}

fn filter(f: &str, t: &str, l: &str) -> Rule {
    let opt = |s: &str| (!s.is_empty()).then(|| s.to_string());
    Rule::Filter(
        parse_filter(opt(f).as_deref(), opt(t).as_deref(), opt(l).as_deref()).expect("valid"),
    )
}

#[test]
fn routing_delivers_to_exactly_the_matching_subscriptions() {
    let mut index = Index::new();
    index.insert(1, Rule::Firehose);
    index.insert(2, filter("7", "", ""));
    index.insert(3, filter("", "rust,hello world", ""));
    index.insert(4, filter("", "", "0,0,10,10,170,-20,-170,-10"));
    index.insert(
        5,
        Rule::User {
            uid: 9,
            following: vec![7],
        },
    );
    index.insert(6, Rule::Sample { rate: 1.0 });
    index.insert(7, filter("8", "rust", "0,0,1,1"));
    let mut reply = status(13, 3, "re", None);
    reply.reply_to_uid = Some(7);
    let mut repost = status(14, 3, "rt", None);
    repost.repost_of_uid = Some(8);
    let mut private = status(15, 7, "private rust at home", Some((5.0, 5.0)));
    private.private = true;
    let del = |status_id, uid, private| Event::Delete {
        status_id,
        uid,
        private,
        grouped: false,
    };
    let follow = |source, target, following| Event::Follow {
        source,
        target,
        following,
    };
    let mut out = Vec::new();
    check(
        &[
            (
                Event::Status(status(10, 7, "plain", None)),
                vec![1, 2, 5, 6],
            ),
            (
                Event::Status(status(11, 1, "Hello, wide WORLD", None)),
                vec![1, 3, 6],
            ),
            (
                Event::Status(status(12, 1, "#Rust here", Some((5.0, 5.0)))),
                vec![1, 3, 4, 6, 7],
            ),
            (
                Event::Status(status(16, 1, "x", Some((-15.0, 179.5)))),
                vec![1, 4, 6],
            ),
            (Event::Status(reply), vec![1, 2, 6]),
            (Event::Status(repost), vec![1, 6, 7]),
            (Event::Status(private), vec![5]),
            (Event::Status(status(17, 9, "mine", None)), vec![1, 5, 6]),
            // A public delete also reaches every filter by track or
            // locations (3, 4, 7): it cannot know which statuses it got.
            (del(10, 7, false), vec![1, 2, 3, 4, 5, 6, 7]),
            (del(15, 7, true), vec![5]),
            (follow(9, 8, true), vec![1, 5]),
            (
                Event::Status(status(18, 8, "now followed", None)),
                vec![1, 5, 6, 7],
            ),
            (follow(9, 7, false), vec![1, 5]),
            (
                Event::Status(status(19, 7, "no longer followed", None)),
                vec![1, 2, 6],
            ),
            (follow(2, 9, true), vec![1, 5]),
            (Event::Other, vec![1]),
        ],
        |ev| {
            index.route(ev, &mut out);
            out.clone()
        },
    );
}

#[test]
fn removed_subscriptions_leave_no_trace() {
    let mut index = Index::new();
    index.insert(1, filter("7", "rust", "0,0,10,10"));
    index.insert(2, filter("7", "rust", "0,0,10,10"));
    index.insert(
        3,
        Rule::User {
            uid: 9,
            following: vec![7],
        },
    );
    index.remove(1);
    index.remove(3);
    let mut out = Vec::new();
    let ev = Event::Status(status(1, 7, "rust", Some((5.0, 5.0))));
    index.route(&ev, &mut out);
    assert_eq!(out, vec![2]);
    index.remove(2);
    index.route(&ev, &mut out);
    assert!(out.is_empty());
    assert!(index.is_empty());
}

#[test]
fn sample_is_the_same_for_every_client_at_a_rate_and_nested_across_rates() {
    let mut index = Index::new();
    index.insert(1, Rule::Sample { rate: 0.1 });
    index.insert(2, Rule::Sample { rate: 0.1 });
    index.insert(3, Rule::Sample { rate: 0.5 });
    let mut out = Vec::new();
    let (mut n_low, mut n_high) = (0, 0);
    for id in 1..=10_000u64 {
        index.route(&Event::Status(status(id, 1, "x", None)), &mut out);
        let low = out.contains(&1);
        assert_eq!(low, out.contains(&2), "same statuses for one rate");
        assert!(!low || out.contains(&3), "a lower rate is a subset");
        n_low += u32::from(low);
        n_high += u32::from(out.contains(&3));
    }
    assert!((800..1200).contains(&n_low), "about 10%: {n_low}");
    assert!((4500..5500).contains(&n_high), "about 50%: {n_high}");
}

/// A deterministic generator for the randomized comparison below.
struct Lcg(u64);
impl Lcg {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// A follow (two in three) or unfollow between two of users `1..=users`.
fn random_follow(rng: &mut Lcg, users: u64) -> Event<'static> {
    Event::Follow {
        source: 1 + rng.below(users),
        target: 1 + rng.below(users),
        following: rng.below(3) != 0,
    }
}

/// A delete of status `id` by one of users `1..=users`, private one time in four.
fn random_delete(rng: &mut Lcg, id: u64, users: u64) -> Event<'static> {
    Event::Delete {
        status_id: id,
        uid: 1 + rng.below(users),
        private: rng.below(4) == 0,
        grouped: false,
    }
}

/// The index must agree with the obvious per-subscription check, through
/// inserts, removals and re-inserts.
#[test]
fn the_index_agrees_with_checking_every_filter_one_by_one() {
    let mut rng = Lcg(9);
    // Short words and long ones (the index copies short terms' text beside
    // their hash and reads the long ones from the term's slot).
    let words = [
        "rust",
        "redis",
        "go",
        "tea",
        "coffee",
        "rain",
        "sun",
        "cat",
        "doghouse_keeper",
        "jazzfestivals",
    ];
    let mut specs = std::collections::BTreeMap::new();
    let mut index = Index::new();
    for round in 0..3000u64 {
        // Churn: add or replace a subscription, sometimes remove one.
        let sub = rng.below(60);
        if rng.below(4) == 0 {
            index.remove(sub);
            specs.remove(&sub);
        } else {
            let follow: Vec<String> = (0..rng.below(3))
                .map(|_| (1 + rng.below(20)).to_string())
                .collect();
            let track: Vec<String> = (0..rng.below(3))
                .map(|_| {
                    let n = 1 + rng.below(2);
                    (0..n)
                        .map(|_| words[rng.below(10) as usize])
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect();
            let boxes: Vec<f64> = if rng.below(2) == 0 {
                let lon = rng.below(20) as f64 - 10.0;
                let lat = rng.below(20) as f64 - 10.0;
                vec![lon, lat, lon + 5.0, lat + 5.0]
            } else {
                vec![]
            };
            if let Ok(spec) = firehose_filters::FilterSpec::from_parts(
                follow.iter().map(String::as_str),
                track.iter().map(String::as_str),
                &boxes,
            ) {
                index.insert(sub, Rule::Filter(spec.clone()));
                specs.insert(sub, spec);
            }
        }
        let message: String = (0..1 + rng.below(5))
            .map(|_| words[rng.below(10) as usize])
            .collect::<Vec<_>>()
            .join(" ");
        let coords =
            (rng.below(2) == 0).then(|| (rng.below(30) as f64 - 15.0, rng.below(30) as f64 - 15.0));
        let view = StatusView {
            reply_to_uid: (rng.below(4) == 0).then(|| 1 + rng.below(20)),
            repost_of_uid: (rng.below(4) == 0).then(|| 1 + rng.below(20)),
            private: rng.below(8) == 0,
            ..status(round, 1 + rng.below(20), &message, coords)
        };
        let mut got = Vec::new();
        index.route(&Event::Status(view), &mut got);
        let expected: Vec<u64> = specs
            .iter()
            .filter(|(_, spec)| spec.matches(&view))
            .map(|(sub, _)| *sub)
            .collect();
        assert_eq!(got, expected, "round {round}: {message:?} at {coords:?}");
    }
}

/// `route_batch` gives what routing the events one by one gives, follow
/// events included: they change the user streams' followed sets mid-batch.
#[test]
fn routing_a_batch_equals_routing_each_event_in_turn() {
    let words = ["rust", "redis", "go", "tea", "doghouse_keeper", "jazz"];
    let build = || {
        let mut rng = Lcg(5);
        let mut index = Index::new();
        index.insert(1000, Rule::Firehose);
        index.insert(1001, Rule::Sample { rate: 0.5 });
        for sub in 0..40u64 {
            let rule = if sub % 4 == 0 {
                Rule::User {
                    uid: 1 + rng.below(10),
                    following: (0..rng.below(4)).map(|_| 1 + rng.below(10)).collect(),
                }
            } else {
                let track = format!(
                    "{},{} {}",
                    words[rng.below(6) as usize],
                    words[rng.below(6) as usize],
                    words[rng.below(6) as usize]
                );
                let lon = rng.below(20) as f64 - 10.0;
                let lat = rng.below(20) as f64 - 10.0;
                let boxes = format!("{lon},{lat},{},{}", lon + 5.0, lat + 5.0);
                filter(&(1 + rng.below(10)).to_string(), &track, &boxes)
            };
            index.insert(sub, rule);
        }
        index
    };
    let (mut one_by_one, mut batched) = (build(), build());
    let mut rng = Lcg(11);
    let messages: Vec<String> = (0..64)
        .map(|_| {
            (0..1 + rng.below(6))
                .map(|_| words[rng.below(6) as usize])
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    for round in 0..50 {
        let events: Vec<Event<'_>> = (0..1 + rng.below(24))
            .map(|i| match rng.below(8) {
                0 | 1 => random_follow(&mut rng, 10),
                2 => random_delete(&mut rng, i, 10),
                3 => Event::Other,
                _ => Event::Status(StatusView {
                    private: rng.below(5) == 0,
                    ..status(
                        round * 100 + i,
                        1 + rng.below(10),
                        &messages[rng.below(64) as usize],
                        (rng.below(2) == 0)
                            .then(|| (rng.below(30) as f64 - 15.0, rng.below(30) as f64 - 15.0)),
                    )
                }),
            })
            .collect();
        let mut outs = Vec::new();
        batched.route_batch(&events, &mut outs);
        assert_eq!(outs.len(), events.len());
        for (i, e) in events.iter().enumerate() {
            let mut out = Vec::new();
            one_by_one.route(e, &mut out);
            assert_eq!(outs[i], out, "round {round}, event {i}: {e:?}");
        }
    }
}

/// One rule checked alone (`Rule::matches`, used for a subscription's
/// replay) answers as an index holding only that rule routes, for every
/// kind of rule and event, user rules following their user's follows.
#[test]
fn a_rule_alone_matches_what_an_index_of_it_routes() {
    let words = ["rust", "redis", "go", "tea", "doghouse_keeper", "jazz"];
    let mut rng = Lcg(23);
    for trial in 0..200 {
        let mut rule = match trial % 4 {
            0 => Rule::Firehose,
            1 => Rule::Sample {
                rate: [0.1, 0.5, 1.0][rng.below(3) as usize],
            },
            2 => Rule::User {
                uid: 1 + rng.below(6),
                following: (0..rng.below(4)).map(|_| 1 + rng.below(6)).collect(),
            },
            _ => {
                let lon = rng.below(20) as f64 - 10.0;
                let lat = rng.below(20) as f64 - 10.0;
                filter(
                    &(1 + rng.below(6)).to_string(),
                    words[rng.below(6) as usize],
                    &format!("{lon},{lat},{},{}", lon + 5.0, lat + 5.0),
                )
            }
        };
        let mut index = Index::new();
        index.insert(7, rule.clone());
        let notified: Vec<u64> = (0..1 + rng.below(2)).map(|_| 1 + rng.below(6)).collect();
        for i in 0..60 {
            let message: String = (0..1 + rng.below(4))
                .map(|_| words[rng.below(6) as usize])
                .collect::<Vec<_>>()
                .join(" ");
            let event = match rng.below(7) {
                0 => random_follow(&mut rng, 6),
                1 => random_delete(&mut rng, i, 6),
                2 => Event::Notice {
                    uids: &notified,
                    public: rng.below(2) == 0,
                },
                3 => Event::Other,
                _ => Event::Status(StatusView {
                    private: rng.below(5) == 0,
                    reply_to_uid: (rng.below(4) == 0).then(|| 1 + rng.below(6)),
                    repost_of_uid: (rng.below(4) == 0).then(|| 1 + rng.below(6)),
                    ..status(
                        trial * 100 + i,
                        1 + rng.below(6),
                        &message,
                        (rng.below(2) == 0)
                            .then(|| (rng.below(30) as f64 - 15.0, rng.below(30) as f64 - 15.0)),
                    )
                }),
            };
            let mut out = Vec::new();
            index.route(&event, &mut out);
            let alone = rule.matches(&event);
            assert_eq!(
                alone,
                out == [7],
                "trial {trial}, event {i}: {event:?} for {rule:?}"
            );
        }
    }
}

/// The grid finds exactly the boxes a scan of every box finds: boxes from a
/// thousandth of a degree to the whole world, edges on and off cell borders,
/// boxes across the antimeridian, points on edges, corners, the poles and
/// ±180, through inserts and removals.
#[test]
fn the_geo_grid_agrees_with_scanning_every_box() {
    use firehose_filters::geo::GeoIndex;
    let mut rng = Lcg(23);
    // Widths and heights in degrees: each grid level's cell size, just
    // under and over it, and sizes only the huge list takes.
    let sizes: [f64; 16] = [
        0.001, 0.015625, 0.0625, 0.07, 0.25, 0.3, 1.0, 1.5, 4.0, 6.0, 16.0, 40.0, 100.0, 200.0,
        359.0, 360.0,
    ];
    // Positions on a 1/64° lattice (so edges fall on cell borders) or anywhere.
    let coord = |rng: &mut Lcg, lo: f64, span: f64| {
        if span <= 0.0 {
            return lo;
        }
        if rng.below(2) == 0 {
            lo + (rng.below((span * 64.0) as u64 + 1) as f64 / 64.0).min(span)
        } else {
            lo + span * rng.below(1 << 20) as f64 / f64::from(1 << 20)
        }
    };
    let mut grid = GeoIndex::default();
    let mut live: std::collections::BTreeMap<u64, BBox> = std::collections::BTreeMap::new();
    for round in 0..20_000u64 {
        let v = rng.below(300);
        if let Some(b) = live.remove(&v) {
            grid.remove(b, v);
        } else {
            let w = sizes[rng.below(sizes.len() as u64) as usize];
            let h = sizes[rng.below(sizes.len() as u64) as usize].min(180.0);
            // Some boxes end or start right on the antimeridian.
            let sw_lon = match rng.below(8) {
                0 => 180.0 - w,
                1 => -180.0,
                _ => coord(&mut rng, -180.0, 360.0),
            };
            let sw_lat = coord(&mut rng, -90.0, 180.0 - h);
            let mut ne_lon = sw_lon + w;
            if ne_lon > 180.0 {
                // Across the antimeridian (west edge east of the east edge).
                ne_lon -= 360.0;
            }
            let b = BBox::new(sw_lon, sw_lat, ne_lon, sw_lat + h).unwrap();
            grid.insert(b, v);
            live.insert(v, b);
        }
        // A point anywhere, or on an edge or corner of a live box, or on
        // the antimeridian or a pole.
        for _ in 0..4 {
            let (mut lat, mut lon) = (
                coord(&mut rng, -90.0, 180.0),
                coord(&mut rng, -180.0, 360.0),
            );
            if let Some((_, b)) = live
                .iter()
                .nth(rng.below(live.len().max(1) as u64) as usize)
            {
                match rng.below(4) {
                    0 => (lat, lon) = (b.sw_lat, b.sw_lon),
                    1 => (lat, lon) = (b.ne_lat, b.ne_lon),
                    2 => lat = b.sw_lat,
                    _ => {}
                }
            }
            match rng.below(8) {
                0 => lon = 180.0,
                1 => lon = -180.0,
                2 => lat = if rng.below(2) == 0 { 90.0 } else { -90.0 },
                _ => {}
            }
            let mut got = Vec::new();
            grid.find(lat, lon, |v| got.push(v));
            got.sort_unstable();
            got.dedup();
            let want: Vec<u64> = live
                .iter()
                .filter(|(_, b)| b.contains(lat, lon))
                .map(|(v, _)| *v)
                .collect();
            assert_eq!(got, want, "round {round}: point ({lat}, {lon})");
        }
    }
}
