//! Bounding boxes and a two-level grid over them.
//!
//! A box is `sw_lon,sw_lat,ne_lon,ne_lat` in degrees. Edges are inclusive: a
//! point on the border is inside. Latitudes must satisfy `sw_lat <= ne_lat`.
//! **Antimeridian rule:** a box whose `sw_lon` is greater than its `ne_lon`
//! crosses the antimeridian and covers `sw_lon..=180` and `-180..=ne_lon`
//! (so `170,-10,-170,10` is a 20° wide box around Fiji). Longitudes 180 and
//! -180 are the same meridian and both edges match it.

/// A validated bounding box.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BBox {
    /// West edge, degrees in [-180, 180].
    pub sw_lon: f64,
    /// South edge, degrees in [-90, 90].
    pub sw_lat: f64,
    /// East edge, degrees in [-180, 180]; less than `sw_lon` when the box crosses the antimeridian.
    pub ne_lon: f64,
    /// North edge, degrees in [-90, 90], at least `sw_lat`.
    pub ne_lat: f64,
}

impl BBox {
    /// Validates one box; the error is a sentence for the `locations` parameter.
    pub fn new(sw_lon: f64, sw_lat: f64, ne_lon: f64, ne_lat: f64) -> Result<BBox, String> {
        let lon_ok = |v: f64| v.is_finite() && (-180.0..=180.0).contains(&v);
        let lat_ok = |v: f64| v.is_finite() && (-90.0..=90.0).contains(&v);
        if !lon_ok(sw_lon) || !lon_ok(ne_lon) {
            return Err("longitudes must be within [-180, 180]".into());
        }
        if !lat_ok(sw_lat) || !lat_ok(ne_lat) {
            return Err("latitudes must be within [-90, 90]".into());
        }
        if sw_lat > ne_lat {
            return Err(format!(
                "box south-west latitude {sw_lat} is north of its north-east latitude {ne_lat}"
            ));
        }
        Ok(BBox {
            sw_lon,
            sw_lat,
            ne_lon,
            ne_lat,
        })
    }

    /// Whether the box crosses the antimeridian.
    pub fn crosses_antimeridian(&self) -> bool {
        self.sw_lon > self.ne_lon
    }

    /// Whether the point (`lat`, `lon`) lies inside or on the border.
    pub fn contains(&self, lat: f64, lon: f64) -> bool {
        if lat < self.sw_lat || lat > self.ne_lat {
            return false;
        }
        let inside = |lon: f64| {
            if self.crosses_antimeridian() {
                lon >= self.sw_lon || lon <= self.ne_lon
            } else {
                lon >= self.sw_lon && lon <= self.ne_lon
            }
        };
        // -180 and 180 are one meridian.
        inside(lon) || (lon == 180.0 && inside(-180.0)) || (lon == -180.0 && inside(180.0))
    }

    /// Longitude spans the box covers, one or two (antimeridian).
    fn lon_spans(&self) -> [(f64, f64); 2] {
        if self.crosses_antimeridian() {
            [(self.sw_lon, 180.0), (-180.0, self.ne_lon)]
        } else {
            [(self.sw_lon, self.ne_lon), (f64::NAN, f64::NAN)]
        }
    }
}

/// A grid level: cells of `deg` degrees.
#[derive(Debug, Clone)]
struct Level<T> {
    deg: f64,
    n_lat: usize,
    n_lon: usize,
    cells: Vec<Vec<(BBox, T)>>,
}

impl<T: Copy + PartialEq> Level<T> {
    fn new(deg: f64) -> Self {
        let n_lat = (180.0 / deg) as usize;
        let n_lon = (360.0 / deg) as usize;
        Level {
            deg,
            n_lat,
            n_lon,
            cells: Vec::new(),
        }
    }

    fn lat_idx(&self, lat: f64) -> usize {
        (((lat + 90.0) / self.deg).floor().max(0.0) as usize).min(self.n_lat - 1)
    }

    fn lon_idx(&self, lon: f64) -> usize {
        (((lon + 180.0) / self.deg).floor().max(0.0) as usize).min(self.n_lon - 1)
    }

    /// Cell indices the box covers, or `None` if more than `max`.
    fn cover(&self, b: &BBox, max: usize) -> Option<Vec<usize>> {
        let lats = self.lat_idx(b.sw_lat)..=self.lat_idx(b.ne_lat);
        let mut lons: Vec<usize> = Vec::new();
        for (w, e) in b.lon_spans() {
            if w.is_nan() {
                continue;
            }
            lons.extend(self.lon_idx(w)..=self.lon_idx(e));
        }
        // The meridian ±180 lives in the first and the last column.
        if lons.contains(&(self.n_lon - 1)) && !lons.contains(&0) && b.contains(b.sw_lat, -180.0) {
            lons.push(0);
        }
        if lons.contains(&0) && !lons.contains(&(self.n_lon - 1)) && b.contains(b.sw_lat, 180.0) {
            lons.push(self.n_lon - 1);
        }
        lons.sort_unstable();
        lons.dedup();
        if lats.clone().count() * lons.len() > max {
            return None;
        }
        Some(
            lats.flat_map(|la| lons.iter().map(move |lo| la * self.n_lon + lo))
                .collect(),
        )
    }

    fn cell_of(&self, lat: f64, lon: f64) -> usize {
        self.lat_idx(lat) * self.n_lon + self.lon_idx(lon)
    }

    fn insert(&mut self, cells: &[usize], b: BBox, v: T) {
        if self.cells.is_empty() {
            self.cells = vec![Vec::new(); self.n_lat * self.n_lon];
        }
        for &c in cells {
            self.cells[c].push((b, v));
        }
    }

    fn remove(&mut self, cells: &[usize], v: T) {
        for &c in cells {
            if let Some(cell) = self.cells.get_mut(c) {
                cell.retain(|(_, x)| *x != v);
            }
        }
    }
}

/// Most cells one box may take in a level before it moves to a coarser one.
const MAX_CELLS: usize = 64;

/// Boxes of many subscribers, found from a point without scanning them all:
/// small boxes live in a 1° grid, large ones in a 10° grid, and the few boxes
/// too large even for that in one list.
#[derive(Debug, Clone)]
pub struct GeoIndex<T> {
    fine: Level<T>,
    coarse: Level<T>,
    huge: Vec<(BBox, T)>,
}

impl<T: Copy + PartialEq> Default for GeoIndex<T> {
    fn default() -> Self {
        GeoIndex {
            fine: Level::new(1.0),
            coarse: Level::new(10.0),
            huge: Vec::new(),
        }
    }
}

impl<T: Copy + PartialEq> GeoIndex<T> {
    /// Files `b` under `v`.
    pub fn insert(&mut self, b: BBox, v: T) {
        if let Some(cells) = self.fine.cover(&b, MAX_CELLS) {
            self.fine.insert(&cells, b, v);
        } else if let Some(cells) = self.coarse.cover(&b, MAX_CELLS) {
            self.coarse.insert(&cells, b, v);
        } else {
            self.huge.push((b, v));
        }
    }

    /// Removes box `b` filed under `v` (and any other box of `v` in the same cells).
    pub fn remove(&mut self, b: BBox, v: T) {
        if let Some(cells) = self.fine.cover(&b, MAX_CELLS) {
            self.fine.remove(&cells, v);
        } else if let Some(cells) = self.coarse.cover(&b, MAX_CELLS) {
            self.coarse.remove(&cells, v);
        } else {
            self.huge.retain(|(_, x)| *x != v);
        }
    }

    /// Calls `f` for every value with a box containing the point (a value may
    /// come more than once when several of its boxes contain it).
    pub fn find(&self, lat: f64, lon: f64, mut f: impl FnMut(T)) {
        let mut scan = |list: &[(BBox, T)]| {
            for (b, v) in list {
                if b.contains(lat, lon) {
                    f(*v);
                }
            }
        };
        for level in [&self.fine, &self.coarse] {
            if !level.cells.is_empty() {
                scan(&level.cells[level.cell_of(lat, lon)]);
                // A point on the ±180 meridian also belongs to the other edge column.
                if lon.abs() == 180.0 {
                    scan(&level.cells[level.cell_of(lat, -lon)]);
                }
            }
        }
        scan(&self.huge);
    }
}
