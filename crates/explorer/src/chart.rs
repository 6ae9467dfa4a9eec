//! Pictures drawn on the server as SVG geometry for the templates: the chain (seed 000's
//! Appendix A — blocks as boxes holding their transactions, arrows from a spending transaction
//! to the one whose output it spends — with side branches drawn in rows beside the main chain)
//! and bar histograms. Pure: positions from data, no IO.

use std::collections::HashMap;

use scalechain_types::{Hash, Header};

/// Horizontal distance between block columns.
pub const COLUMN: u32 = 210;
/// Width of a block's box.
pub const BOX_W: u32 = 176;
/// Vertical distance between branch rows, at least (a row grows with its tallest box).
const ROW_GAP: u32 = 36;
/// Height of a block's box without transactions.
const BOX_HEAD: u32 = 46;
/// Height of one transaction's row inside a box.
const TX_ROW: u32 = 24;
/// Transactions drawn per block, at most (the box says how many more it holds).
pub const TXS_SHOWN: usize = 6;

/// One block given to [`layout`].
#[derive(Clone, Debug)]
pub struct PicBlock {
    /// Its header.
    pub header: Header,
    /// Its hash.
    pub hash: Hash,
    /// On the main chain?
    pub main: bool,
    /// Its first transactions (at most [`TXS_SHOWN`]): txid and the txids its inputs spend.
    pub txs: Vec<(Hash, Vec<(Hash, u32)>)>,
    /// How many transactions it holds (`None`: its body is not stored).
    pub tx_count: Option<usize>,
}

/// A block's box.
#[derive(Clone, Debug, PartialEq)]
pub struct BlockBox {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Height of the box.
    pub h: u32,
    /// Hash (the link target).
    pub hash: String,
    /// Its first 12 hex digits.
    pub short: String,
    /// Height.
    pub height: u64,
    /// `main` or `side`.
    pub class: &'static str,
    /// Transactions it holds, as text (`?` when the body is not stored).
    pub txs: String,
    /// Transactions drawn.
    pub ovals: Vec<TxOval>,
    /// Transactions not drawn.
    pub more: usize,
}

/// A transaction inside a block's box.
#[derive(Clone, Debug, PartialEq)]
pub struct TxOval {
    /// Centre.
    pub cx: u32,
    /// Centre.
    pub cy: u32,
    /// Txid (the link target).
    pub txid: String,
    /// Its first 10 hex digits.
    pub short: String,
}

/// A line from one point to another.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// Start.
    pub x1: u32,
    /// Start.
    pub y1: u32,
    /// End.
    pub x2: u32,
    /// End.
    pub y2: u32,
    /// CSS class: `main`, `side` (block to parent) or `spend` (input to spent output).
    pub class: &'static str,
    /// The output index of a `spend` line (empty otherwise).
    pub label: String,
}

/// The chain picture.
#[derive(Clone, Debug, PartialEq)]
pub struct ChainPicture {
    /// Width of the drawing.
    pub width: u32,
    /// Height of the drawing.
    pub height: u32,
    /// Blocks.
    pub boxes: Vec<BlockBox>,
    /// Block-to-parent links and spend arrows.
    pub lines: Vec<Line>,
    /// Side branches drawn (rows besides the main chain's).
    pub side_rows: usize,
}

/// Lays out `blocks` (heights `lo..=hi`): the main chain on row 0, left to right by height;
/// each side branch on the first row below that is free from the branch's first height on.
pub fn layout(mut blocks: Vec<PicBlock>, lo: u64) -> ChainPicture {
    blocks.sort_by_key(|b| (!b.main, b.header.height, b.header.time));
    let by_hash: HashMap<Hash, usize> = blocks.iter().enumerate().map(|(i, b)| (b.hash, i)).collect();
    // Rows: a side block continues its parent's row when it is the parent's first side child
    // there; otherwise it opens a row below.
    let mut row_of: Vec<usize> = vec![0; blocks.len()];
    let mut row_end: Vec<u64> = vec![u64::MAX]; // last height used per row; row 0 is the main chain
    let mut continued: HashMap<Hash, bool> = HashMap::new();
    for i in 0..blocks.len() {
        if blocks[i].main {
            continue;
        }
        let parent = blocks[i].header.prev_hash;
        let h = blocks[i].header.height;
        let parent_row = by_hash.get(&parent).filter(|&&p| !blocks[p].main).map(|&p| row_of[p]);
        let row = match parent_row {
            Some(r) if !continued.get(&parent).copied().unwrap_or(false) => r,
            _ => match row_end.iter().skip(1).position(|&end| end < h) {
                Some(r) => r + 1,
                None => {
                    row_end.push(0);
                    row_end.len() - 1
                }
            },
        };
        continued.insert(parent, true);
        row_of[i] = row;
        row_end[row] = h;
    }
    let rows = row_end.len();
    let box_h =
        |b: &PicBlock| BOX_HEAD + TX_ROW * b.txs.len() as u32 + if more(b) > 0 { TX_ROW / 2 + 4 } else { 0 };
    let mut row_h = vec![0u32; rows];
    for (i, b) in blocks.iter().enumerate() {
        row_h[row_of[i]] = row_h[row_of[i]].max(box_h(b));
    }
    let mut row_y = vec![20u32; rows];
    for r in 1..rows {
        row_y[r] = row_y[r - 1] + row_h[r - 1] + ROW_GAP;
    }
    let x_of =
        |height: u64| 20 + COLUMN * u32::try_from(height.saturating_sub(lo)).unwrap_or(u32::MAX / COLUMN / 2);
    let mut boxes = Vec::with_capacity(blocks.len());
    let mut oval_at: HashMap<Hash, (u32, u32)> = HashMap::new();
    for (i, b) in blocks.iter().enumerate() {
        let (x, y) = (x_of(b.header.height), row_y[row_of[i]]);
        let ovals: Vec<TxOval> = b
            .txs
            .iter()
            .enumerate()
            .map(|(k, (txid, _))| {
                let o = TxOval {
                    cx: x + BOX_W / 2,
                    cy: y + BOX_HEAD + TX_ROW * k as u32 + TX_ROW / 2 - 4,
                    txid: txid.to_string(),
                    short: txid.to_string()[..10].to_string(),
                };
                oval_at.entry(*txid).or_insert((o.cx, o.cy));
                o
            })
            .collect();
        let hash = b.hash.to_string();
        boxes.push(BlockBox {
            x,
            y,
            h: box_h(b),
            short: hash[..12].to_string(),
            hash,
            height: b.header.height,
            class: if b.main { "main" } else { "side" },
            txs: b.tx_count.map_or_else(|| "?".to_string(), |n| n.to_string()),
            ovals,
            more: more(b),
        });
    }
    let mut lines = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        if let Some(&p) = by_hash.get(&b.header.prev_hash) {
            let (c, pb) = (&boxes[i], &boxes[p]);
            lines.push(Line {
                x1: c.x,
                y1: c.y + BOX_HEAD / 2,
                x2: pb.x + BOX_W,
                y2: pb.y + BOX_HEAD / 2,
                class: if b.main { "main" } else { "side" },
                label: String::new(),
            });
        }
        for (k, (_, spends)) in b.txs.iter().enumerate() {
            let from = &boxes[i].ovals[k];
            let mut seen = Vec::new();
            for (prev, index) in spends {
                if seen.contains(prev) {
                    continue;
                }
                seen.push(*prev);
                if let Some(&(x2, y2)) = oval_at.get(prev) {
                    if (x2, y2) != (from.cx, from.cy) {
                        lines.push(Line {
                            x1: from.cx - 40,
                            y1: from.cy,
                            x2: x2 + 40,
                            y2,
                            class: "spend",
                            label: index.to_string(),
                        });
                    }
                }
            }
        }
    }
    let hi = blocks.iter().map(|b| b.header.height).max().unwrap_or(lo);
    ChainPicture {
        width: x_of(hi) + BOX_W + 20,
        height: row_y[rows - 1] + row_h[rows - 1] + 20,
        boxes,
        lines,
        side_rows: rows - 1,
    }
}

fn more(b: &PicBlock) -> usize {
    b.tx_count.map_or(0, |n| n.saturating_sub(b.txs.len()))
}

/// One bar of a histogram.
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// Left edge.
    pub x: u32,
    /// Top edge.
    pub y: u32,
    /// Height.
    pub h: u32,
    /// Its bucket, as text.
    pub label: String,
    /// Its count.
    pub count: u64,
}

/// A histogram as the templates draw it (`templates/explorer/bars.html`).
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    /// The element id.
    pub id: String,
    /// Its caption.
    pub caption: String,
    /// The bars.
    pub bars: Vec<Bar>,
    /// Width of the drawing.
    pub width: u32,
}

impl BarChart {
    /// A chart of `(label, count)` buckets.
    pub fn new(id: impl Into<String>, caption: impl Into<String>, buckets: &[(String, u64)]) -> BarChart {
        let bars = bars(buckets);
        BarChart { id: id.into(), caption: caption.into(), width: 40 + BAR_SLOT * bars.len() as u32, bars }
    }
}

/// Height of a histogram's plot area.
pub const BAR_AREA: u32 = 160;
/// Width of one bar's slot.
pub const BAR_SLOT: u32 = 56;

/// Bars for `(label, count)` buckets, scaled to the largest count.
pub fn bars(buckets: &[(String, u64)]) -> Vec<Bar> {
    let max = buckets.iter().map(|b| b.1).max().unwrap_or(0).max(1);
    buckets
        .iter()
        .enumerate()
        .map(|(i, (label, count))| {
            let h = u32::try_from(u128::from(*count) * u128::from(BAR_AREA) / u128::from(max))
                .unwrap_or(BAR_AREA);
            let h = if *count > 0 { h.max(2) } else { 0 };
            Bar { x: 40 + BAR_SLOT * i as u32, y: 22 + BAR_AREA - h, h, label: label.clone(), count: *count }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use scalechain_types::Target;

    fn header(height: u64, prev: Hash, time: u64) -> Header {
        Header {
            version: 1,
            height,
            prev_hash: prev,
            merkle_root: Hash::ZERO,
            time,
            target: Target(Hash([0xff; 32])),
            nonce: 0,
        }
    }

    fn h(n: u8) -> Hash {
        Hash([n; 32])
    }

    fn block(height: u64, hash: Hash, prev: Hash, main: bool) -> PicBlock {
        PicBlock {
            header: header(height, prev, height * 10 + u64::from(main)),
            hash,
            main,
            txs: vec![],
            tx_count: Some(1),
        }
    }

    #[test]
    fn side_branches_get_rows_of_their_own_and_continue_them() {
        // main: 1 - 2 - 3 - 4; side A: 2' - 3' (from 1); side B: 4' (from 3).
        let blocks = vec![
            block(1, h(1), h(0), true),
            block(2, h(2), h(1), true),
            block(3, h(3), h(2), true),
            block(4, h(4), h(3), true),
            block(2, h(12), h(1), false),
            block(3, h(13), h(12), false),
            block(4, h(14), h(3), false),
        ];
        let p = layout(blocks, 1);
        let row = |hash: Hash| p.boxes.iter().find(|b| b.hash == hash.to_string()).unwrap().y;
        assert_eq!(row(h(1)), row(h(4)), "the main chain is one row");
        assert!(row(h(12)) > row(h(1)), "a side branch is drawn below the main chain");
        assert_eq!(row(h(12)), row(h(13)), "a branch continues its row");
        // Side B starts at height 4, after side A's last height (3): it may share A's row.
        assert_eq!(p.side_rows, 1);
        assert_eq!(row(h(14)), row(h(12)));
        assert_eq!(p.lines.iter().filter(|l| l.class == "side").count(), 3);
        assert_eq!(p.lines.iter().filter(|l| l.class == "main").count(), 3);
        let x = |hash: Hash| p.boxes.iter().find(|b| b.hash == hash.to_string()).unwrap().x;
        assert_eq!(x(h(13)), x(h(3)), "a block's column is its height");
    }

    #[test]
    fn overlapping_branches_take_separate_rows() {
        let blocks = vec![
            block(1, h(1), h(0), true),
            block(2, h(2), h(1), true),
            block(3, h(3), h(2), true),
            block(2, h(12), h(1), false),
            block(3, h(13), h(12), false),
            block(3, h(23), h(2), false),
        ];
        let p = layout(blocks, 1);
        assert_eq!(p.side_rows, 2, "two branches both at height 3 cannot share a row");
    }

    #[test]
    fn spends_inside_the_picture_are_arrows() {
        let mut a = block(1, h(1), h(0), true);
        a.txs = vec![(h(100), vec![])];
        let mut b = block(2, h(2), h(1), true);
        b.txs = vec![(h(101), vec![]), (h(102), vec![(h(100), 0), (h(100), 1), (h(77), 0)])];
        b.tx_count = Some(40);
        let p = layout(vec![a, b], 1);
        let spends: Vec<_> = p.lines.iter().filter(|l| l.class == "spend").collect();
        assert_eq!(spends.len(), 1, "one arrow per spent transaction drawn; unknown ones none");
        assert_eq!(p.boxes[1].more, 38);
    }

    #[test]
    fn bars_scale_to_the_largest() {
        let b = bars(&[("a".into(), 0), ("b".into(), 5), ("c".into(), 10)]);
        assert_eq!(b[0].h, 0);
        assert_eq!(b[2].h, BAR_AREA);
        assert_eq!(b[1].h, BAR_AREA / 2);
        assert_eq!(b[1].y + b[1].h, b[2].y + b[2].h, "bars stand on one baseline");
    }
}
