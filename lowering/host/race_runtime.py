"""The race detector's runtime, in MLIR: shadow records and the access hook.

Text parsed into a checked host module by host/racecheck.py. Memory is
described by *regions* (at most `MAX_REGIONS`), 8 words each in
`@__dg_race_regions`:

    [base address, end address, element size, shadow address, id, 0, 0, 0]

The runtime registers one region per array argument (id = argument number)
before a launch; the entry pushes one per shared array of the current block
(id = -1 - its number). Each element of a region owns `SHADOW_WORDS` words
of shadow at `shadow + 8 * SHADOW_WORDS * element`: seven records of
(block + 1, thread, epoch, site), block + 1 = 0 meaning empty:

    W  the last write
    A  the last read (since the last write)
    B  the last read from a block other than A's
    C  the last read in A's block and epoch by a thread other than A's
    X, Y, Z  the same three for atomics (since the last write)

`@__dg_race_count` holds [number of regions, epoch]; the epoch grows at
every barrier of a block (`@__dg_race_barrier`). Two accesses race when
they come from different blocks, or from different threads of one block in
the same epoch, one of them is a write or exactly one is an atomic (kind:
0 read, 1 write, 2 atomic). A read is checked against W, X, Y and Z, an
atomic against W, A, B and C, a write against all seven; given that no race
happened before, those records cover every earlier access that can race
with a later one (earlier writes are ordered before W; the reads of A's
block are ordered by epoch, and the atomics of X's). The first race fills
`@__dg_race_report`; later ones only count. A barrier that only some
threads of the block reach (`arrived` != the block's threads) fills words
12-16 the same way:

    [races, address, region id, element, kind1, block1 + 1, thread1, site1,
     kind2, block2 + 1, thread2, site2,
     divergent barriers, barrier site, block + 1, threads arrived,
     the first thread that did not, 0 ...]
"""
from __future__ import annotations

from diffgpu import abi

MAX_REGIONS = abi.RACE_MAX_REGIONS
REPORT_WORDS = abi.RACE_REPORT_WORDS
SHADOW_WORDS = abi.RACE_SHADOW_WORDS  # per element: seven records of four words
READ, WRITE, ATOMIC = 0, 1, 2  # the kinds of an access

REGIONS = "__dg_race_regions"
COUNT = "__dg_race_count"
REPORT = "__dg_race_report"
BEGIN = abi.RACE_BEGIN_FUNC
END = abi.RACE_END_FUNC
PUSH = "__dg_race_push"
POP = "__dg_race_pop"
BARRIER = "__dg_race_barrier"
ACCESS = "__dg_race_access"

_WORD = """
  func.func private @__dg_race_ld(%rec: i64, %k: i64) -> i64 {
    %c8 = arith.constant 8 : i64
    %o = arith.muli %k, %c8 : i64
    %a = arith.addi %rec, %o : i64
    %p = llvm.inttoptr %a : i64 to !llvm.ptr
    %v = llvm.load %p {alignment = 8 : i64} : !llvm.ptr -> i64
    return %v : i64
  }
  func.func private @__dg_race_st(%rec: i64, %k: i64, %v: i64) {
    %c8 = arith.constant 8 : i64
    %o = arith.muli %k, %c8 : i64
    %a = arith.addi %rec, %o : i64
    %p = llvm.inttoptr %a : i64 to !llvm.ptr
    llvm.store %v, %p {alignment = 8 : i64} : i64, !llvm.ptr
    return
  }
  func.func private @__dg_race_put(%rec: i64, %k: i64, %b: i64, %t: i64, %e: i64, %s: i64) {
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c3 = arith.constant 3 : i64
    %k1 = arith.addi %k, %c1 : i64
    %k2 = arith.addi %k, %c2 : i64
    %k3 = arith.addi %k, %c3 : i64
    func.call @__dg_race_st(%rec, %k, %b) : (i64, i64, i64) -> ()
    func.call @__dg_race_st(%rec, %k1, %t) : (i64, i64, i64) -> ()
    func.call @__dg_race_st(%rec, %k2, %e) : (i64, i64, i64) -> ()
    func.call @__dg_race_st(%rec, %k3, %s) : (i64, i64, i64) -> ()
    return
  }
  func.func private @__dg_race_copy(%rec: i64, %from: i64, %to: i64) {
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c3 = arith.constant 3 : i64
    %f1 = arith.addi %from, %c1 : i64
    %f2 = arith.addi %from, %c2 : i64
    %f3 = arith.addi %from, %c3 : i64
    %b = func.call @__dg_race_ld(%rec, %from) : (i64, i64) -> i64
    %t = func.call @__dg_race_ld(%rec, %f1) : (i64, i64) -> i64
    %e = func.call @__dg_race_ld(%rec, %f2) : (i64, i64) -> i64
    %s = func.call @__dg_race_ld(%rec, %f3) : (i64, i64) -> i64
    func.call @__dg_race_put(%rec, %to, %b, %t, %e, %s) : (i64, i64, i64, i64, i64, i64) -> ()
    return
  }
  func.func private @__dg_race_conflict(%rec: i64, %k: i64, %b: i64, %t: i64, %e: i64) -> i1 {
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %k1 = arith.addi %k, %c1 : i64
    %k2 = arith.addi %k, %c2 : i64
    %rb = func.call @__dg_race_ld(%rec, %k) : (i64, i64) -> i64
    %rt = func.call @__dg_race_ld(%rec, %k1) : (i64, i64) -> i64
    %re = func.call @__dg_race_ld(%rec, %k2) : (i64, i64) -> i64
    %full = arith.cmpi ne, %rb, %c0 : i64
    %oblk = arith.cmpi ne, %rb, %b : i64
    %othr = arith.cmpi ne, %rt, %t : i64
    %sep = arith.cmpi eq, %re, %e : i64
    %inb = arith.andi %othr, %sep : i1
    %any = arith.ori %oblk, %inb : i1
    %c = arith.andi %full, %any : i1
    return %c : i1
  }
  // the first of three records (A, B, C or X, Y, Z at k, k + 4, k + 8) that
  // conflicts with the access, or -1; B and C are empty when A is
  func.func private @__dg_race_group(%rec: i64, %k: i64, %b: i64, %t: i64, %e: i64) -> i64 {
    %z = arith.constant 0 : i64
    %c4 = arith.constant 4 : i64
    %c8 = arith.constant 8 : i64
    %none = arith.constant -1 : i64
    %first = func.call @__dg_race_ld(%rec, %k) : (i64, i64) -> i64
    %empty = arith.cmpi eq, %first, %z : i64
    %r = scf.if %empty -> (i64) {
      scf.yield %none : i64
    } else {
      %kb = arith.addi %k, %c4 : i64
      %kc = arith.addi %k, %c8 : i64
      %ca = func.call @__dg_race_conflict(%rec, %k, %b, %t, %e) : (i64, i64, i64, i64, i64) -> i1
      %cb = func.call @__dg_race_conflict(%rec, %kb, %b, %t, %e) : (i64, i64, i64, i64, i64) -> i1
      %cc = func.call @__dg_race_conflict(%rec, %kc, %b, %t, %e) : (i64, i64, i64, i64, i64) -> i1
      %x1 = arith.select %cc, %kc, %none : i64
      %x2 = arith.select %cb, %kb, %x1 : i64
      %x3 = arith.select %ca, %k, %x2 : i64
      scf.yield %x3 : i64
    }
    return %r : i64
  }
  func.func private @__dg_race_note(%rec: i64, %k: i64, %blk: i64, %thr: i64, %ep: i64,
                                    %site: i64) {
    %z = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c2 = arith.constant 2 : i64
    %c4 = arith.constant 4 : i64
    %c8 = arith.constant 8 : i64
    %k1 = arith.addi %k, %c1 : i64
    %k2 = arith.addi %k, %c2 : i64
    %kb = arith.addi %k, %c4 : i64
    %kc = arith.addi %k, %c8 : i64
    %ab = func.call @__dg_race_ld(%rec, %k) : (i64, i64) -> i64
    %at = func.call @__dg_race_ld(%rec, %k1) : (i64, i64) -> i64
    %ae = func.call @__dg_race_ld(%rec, %k2) : (i64, i64) -> i64
    %empty = arith.cmpi eq, %ab, %z : i64
    %sameb = arith.cmpi eq, %ab, %blk : i64
    %samee = arith.cmpi eq, %ae, %ep : i64
    %othr = arith.cmpi ne, %at, %thr : i64
    scf.if %empty {
    } else {
      scf.if %sameb {
        scf.if %samee {
          scf.if %othr {
            func.call @__dg_race_copy(%rec, %k, %kc) : (i64, i64, i64) -> ()
          }
        } else {
          func.call @__dg_race_st(%rec, %kc, %z) : (i64, i64, i64) -> ()
        }
      } else {
        func.call @__dg_race_copy(%rec, %k, %kb) : (i64, i64, i64) -> ()
        func.call @__dg_race_st(%rec, %kc, %z) : (i64, i64, i64) -> ()
      }
    }
    func.call @__dg_race_put(%rec, %k, %blk, %thr, %ep, %site) : (i64, i64, i64, i64, i64, i64) -> ()
    return
  }
"""

_GEOMETRY = """
  func.func private @__dg_race_block() -> i64 {
    %g = memref.get_global @__dg_host_geometry : memref<12xindex>
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c5 = arith.constant 5 : index
    %c9 = arith.constant 9 : index
    %c10 = arith.constant 10 : index
    %one = arith.constant 1 : i64
    %bx = memref.load %g[%c3] : memref<12xindex>
    %by = memref.load %g[%c4] : memref<12xindex>
    %bz = memref.load %g[%c5] : memref<12xindex>
    %gx = memref.load %g[%c9] : memref<12xindex>
    %gy = memref.load %g[%c10] : memref<12xindex>
    %b1 = arith.muli %gy, %bz : index
    %b2 = arith.addi %by, %b1 : index
    %b3 = arith.muli %gx, %b2 : index
    %bl = arith.addi %bx, %b3 : index
    %blk0 = arith.index_cast %bl : index to i64
    %blk = arith.addi %blk0, %one : i64
    return %blk : i64
  }
  func.func private @__dg_race_thread() -> i64 {
    %g = memref.get_global @__dg_host_geometry : memref<12xindex>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c6 = arith.constant 6 : index
    %c7 = arith.constant 7 : index
    %tx = memref.load %g[%c0] : memref<12xindex>
    %ty = memref.load %g[%c1] : memref<12xindex>
    %tz = memref.load %g[%c2] : memref<12xindex>
    %dx = memref.load %g[%c6] : memref<12xindex>
    %dy = memref.load %g[%c7] : memref<12xindex>
    %t1 = arith.muli %dy, %tz : index
    %t2 = arith.addi %ty, %t1 : index
    %t3 = arith.muli %dx, %t2 : index
    %tl = arith.addi %tx, %t3 : index
    %thr = arith.index_cast %tl : index to i64
    return %thr : i64
  }
"""

_REPORT = """
  func.func private @__dg_race_found(%addr: i64, %id: i64, %elem: i64, %rec: i64, %k: i64,
                                     %kind: i64, %b: i64, %t: i64, %s: i64) {
    %c0 = arith.constant 0 : index
    %z = arith.constant 0 : i64
    %one = arith.constant 1 : i64
    %c1 = arith.constant 1 : i64
    %c3 = arith.constant 3 : i64
    %rep = memref.get_global @__dg_race_report : REPORT_T
    %n = memref.load %rep[%c0] : REPORT_T
    %first = arith.cmpi eq, %n, %z : i64
    scf.if %first {
      %k1 = arith.addi %k, %c1 : i64
      %k3 = arith.addi %k, %c3 : i64
      %rb = func.call @__dg_race_ld(%rec, %k) : (i64, i64) -> i64
      %rt = func.call @__dg_race_ld(%rec, %k1) : (i64, i64) -> i64
      %rs = func.call @__dg_race_ld(%rec, %k3) : (i64, i64) -> i64
      %isw = arith.cmpi eq, %k, %z : i64
      %katom = arith.constant ATOMIC_K : i64
      %isa = arith.cmpi sge, %k, %katom : i64
      %kw = arith.constant 1 : i64
      %ka = arith.constant 2 : i64
      %kr = arith.select %isa, %ka, %z : i64
      %kind1 = arith.select %isw, %kw, %kr : i64
      %i1 = arith.constant 1 : index
      %i2 = arith.constant 2 : index
      %i3 = arith.constant 3 : index
      %i4 = arith.constant 4 : index
      %i5 = arith.constant 5 : index
      %i6 = arith.constant 6 : index
      %i7 = arith.constant 7 : index
      %i8 = arith.constant 8 : index
      %i9 = arith.constant 9 : index
      %i10 = arith.constant 10 : index
      %i11 = arith.constant 11 : index
      memref.store %addr, %rep[%i1] : REPORT_T
      memref.store %id, %rep[%i2] : REPORT_T
      memref.store %elem, %rep[%i3] : REPORT_T
      memref.store %kind1, %rep[%i4] : REPORT_T
      memref.store %rb, %rep[%i5] : REPORT_T
      memref.store %rt, %rep[%i6] : REPORT_T
      memref.store %rs, %rep[%i7] : REPORT_T
      memref.store %kind, %rep[%i8] : REPORT_T
      memref.store %b, %rep[%i9] : REPORT_T
      memref.store %t, %rep[%i10] : REPORT_T
      memref.store %s, %rep[%i11] : REPORT_T
    }
    %n1 = arith.addi %n, %one : i64
    memref.store %n1, %rep[%c0] : REPORT_T
    return
  }
"""

_ACCESS = """
  func.func private @__dg_race_access(%addr: i64, %kind: i64, %site: i64) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %z = arith.constant 0 : i64
    %one = arith.constant 1 : i64
    %two = arith.constant 2 : i64
    %eight = arith.constant 8 : i64
    %false = arith.constant false
    %cnt = memref.get_global @__dg_race_count : memref<2xi64>
    %regs = memref.get_global @__dg_race_regions : memref<512xi64>
    %n = memref.load %cnt[%c0] : memref<2xi64>
    %r = scf.while (%j = %z) : (i64) -> i64 {
      %more = arith.cmpi slt, %j, %n : i64
      %hit = scf.if %more -> (i1) {
        %o = arith.muli %j, %eight : i64
        %oi = arith.index_cast %o : i64 to index
        %oe = arith.addi %oi, %c1 : index
        %b = memref.load %regs[%oi] : memref<512xi64>
        %e = memref.load %regs[%oe] : memref<512xi64>
        %ge = arith.cmpi uge, %addr, %b : i64
        %lt = arith.cmpi ult, %addr, %e : i64
        %in = arith.andi %ge, %lt : i1
        scf.yield %in : i1
      } else {
        scf.yield %false : i1
      }
      %miss = arith.xori %hit, %more : i1
      scf.condition(%miss) %j : i64
    } do {
    ^bb0(%j: i64):
      %j1 = arith.addi %j, %one : i64
      scf.yield %j1 : i64
    }
    %found = arith.cmpi slt, %r, %n : i64
    scf.if %found {
      %o = arith.muli %r, %eight : i64
      %oi = arith.index_cast %o : i64 to index
      %c2 = arith.constant 2 : index
      %c3 = arith.constant 3 : index
      %c4 = arith.constant 4 : index
      %o2 = arith.addi %oi, %c2 : index
      %o3 = arith.addi %oi, %c3 : index
      %o4 = arith.addi %oi, %c4 : index
      %base = memref.load %regs[%oi] : memref<512xi64>
      %es = memref.load %regs[%o2] : memref<512xi64>
      %sh = memref.load %regs[%o3] : memref<512xi64>
      %id = memref.load %regs[%o4] : memref<512xi64>
      %d = arith.subi %addr, %base : i64
      %elem = arith.divui %d, %es : i64
      %cbytes = arith.constant SHADOW_BYTES : i64
      %off = arith.muli %elem, %cbytes : i64
      %rec = arith.addi %sh, %off : i64
      %blk = func.call @__dg_race_block() : () -> i64
      %thr = func.call @__dg_race_thread() : () -> i64
      %ep = memref.load %cnt[%c1] : memref<2xi64>
      %kW = arith.constant 0 : i64
      %kA = arith.constant 4 : i64
      %kX = arith.constant ATOMIC_K : i64
      %none = arith.constant -1 : i64
      %isw = arith.cmpi eq, %kind, %one : i64
      %isa = arith.cmpi eq, %kind, %two : i64
      %vs_reads = arith.cmpi ne, %kind, %z : i64
      %vs_atomics = arith.cmpi ne, %kind, %two : i64
      %cw = func.call @__dg_race_conflict(%rec, %kW, %blk, %thr, %ep) : (i64, i64, i64, i64, i64) -> i1
      %bad = scf.if %cw -> (i64) {
        scf.yield %kW : i64
      } else {
        %kr = scf.if %vs_reads -> (i64) {
          %g = func.call @__dg_race_group(%rec, %kA, %blk, %thr, %ep) : (i64, i64, i64, i64, i64) -> i64
          scf.yield %g : i64
        } else {
          scf.yield %none : i64
        }
        %ka = scf.if %vs_atomics -> (i64) {
          %g = func.call @__dg_race_group(%rec, %kX, %blk, %thr, %ep) : (i64, i64, i64, i64, i64) -> i64
          scf.yield %g : i64
        } else {
          scf.yield %none : i64
        }
        %hasr = arith.cmpi sge, %kr, %z : i64
        %k = arith.select %hasr, %kr, %ka : i64
        scf.yield %k : i64
      }
      %race = arith.cmpi sge, %bad, %z : i64
      scf.if %race {
        func.call @__dg_race_found(%addr, %id, %elem, %rec, %bad, %kind, %blk, %thr, %site) : (i64, i64, i64, i64, i64, i64, i64, i64, i64) -> ()
      }
      scf.if %isw {
        func.call @__dg_race_put(%rec, %kW, %blk, %thr, %ep, %site) : (i64, i64, i64, i64, i64, i64) -> ()
        %c4i = arith.constant 4 : i64
        %cend = arith.constant SHADOW_WORDS : i64
        scf.for %w = %c4i to %cend step %c4i : i64 {
          func.call @__dg_race_st(%rec, %w, %z) : (i64, i64, i64) -> ()
        }
      } else {
        %kg = arith.select %isa, %kX, %kA : i64
        func.call @__dg_race_note(%rec, %kg, %blk, %thr, %ep, %site) : (i64, i64, i64, i64, i64, i64) -> ()
      }
    }
    return
  }
"""

_CONTROL = """
  memref.global "private" @__dg_race_regions : memref<512xi64> = dense<0>
  memref.global "private" @__dg_race_count : memref<2xi64> = dense<0>
  memref.global "private" @__dg_race_report : REPORT_T = dense<0>
  func.func @__dg_race_begin(%table: memref<?xi64>, %n: i64) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c8 = arith.constant 8 : index
    %cr = arith.constant REPORT_N : index
    %one = arith.constant 1 : i64
    %z = arith.constant 0 : i64
    %regs = memref.get_global @__dg_race_regions : memref<512xi64>
    %cnt = memref.get_global @__dg_race_count : memref<2xi64>
    %rep = memref.get_global @__dg_race_report : REPORT_T
    %ni = arith.index_cast %n : i64 to index
    %words = arith.muli %ni, %c8 : index
    scf.for %i = %c0 to %words step %c1 {
      %v = memref.load %table[%i] : memref<?xi64>
      memref.store %v, %regs[%i] : memref<512xi64>
    }
    scf.for %i = %c0 to %cr step %c1 {
      memref.store %z, %rep[%i] : REPORT_T
    }
    memref.store %n, %cnt[%c0] : memref<2xi64>
    memref.store %one, %cnt[%c1] : memref<2xi64>
    return
  }
  func.func @__dg_race_end(%out: memref<?xi64>) attributes {llvm.emit_c_interface} {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %cr = arith.constant REPORT_N : index
    %rep = memref.get_global @__dg_race_report : REPORT_T
    scf.for %i = %c0 to %cr step %c1 {
      %v = memref.load %rep[%i] : REPORT_T
      memref.store %v, %out[%i] : memref<?xi64>
    }
    return
  }
  func.func private @__dg_race_push(%base: i64, %end: i64, %es: i64, %sh: i64, %id: i64) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c3 = arith.constant 3 : index
    %c4 = arith.constant 4 : index
    %c8 = arith.constant 8 : i64
    %one = arith.constant 1 : i64
    %max = arith.constant 64 : i64
    %regs = memref.get_global @__dg_race_regions : memref<512xi64>
    %cnt = memref.get_global @__dg_race_count : memref<2xi64>
    %n = memref.load %cnt[%c0] : memref<2xi64>
    %room = arith.cmpi slt, %n, %max : i64
    scf.if %room {
      %o = arith.muli %n, %c8 : i64
      %oi = arith.index_cast %o : i64 to index
      %o1 = arith.addi %oi, %c1 : index
      %o2 = arith.addi %oi, %c2 : index
      %o3 = arith.addi %oi, %c3 : index
      %o4 = arith.addi %oi, %c4 : index
      memref.store %base, %regs[%oi] : memref<512xi64>
      memref.store %end, %regs[%o1] : memref<512xi64>
      memref.store %es, %regs[%o2] : memref<512xi64>
      memref.store %sh, %regs[%o3] : memref<512xi64>
      memref.store %id, %regs[%o4] : memref<512xi64>
      %n1 = arith.addi %n, %one : i64
      memref.store %n1, %cnt[%c0] : memref<2xi64>
    }
    return
  }
  func.func private @__dg_race_pop(%base: i64, %end: i64) {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : i64
    %one = arith.constant 1 : i64
    %regs = memref.get_global @__dg_race_regions : memref<512xi64>
    %cnt = memref.get_global @__dg_race_count : memref<2xi64>
    %n = memref.load %cnt[%c0] : memref<2xi64>
    %last = arith.subi %n, %one : i64
    %o = arith.muli %last, %c8 : i64
    %oi = arith.index_cast %o : i64 to index
    %b = memref.load %regs[%oi] : memref<512xi64>
    %mine = arith.cmpi eq, %b, %base : i64
    scf.if %mine {
      memref.store %last, %cnt[%c0] : memref<2xi64>
    }
    return
  }
  func.func private @__dg_race_barrier(%arrived: i64, %missing: i64, %threads: i64,
                                       %site: i64) {
    %c1 = arith.constant 1 : index
    %c12 = arith.constant 12 : index
    %c13 = arith.constant 13 : index
    %c14 = arith.constant 14 : index
    %c15 = arith.constant 15 : index
    %c16 = arith.constant 16 : index
    %z = arith.constant 0 : i64
    %one = arith.constant 1 : i64
    %cnt = memref.get_global @__dg_race_count : memref<2xi64>
    %e = memref.load %cnt[%c1] : memref<2xi64>
    %e1 = arith.addi %e, %one : i64
    memref.store %e1, %cnt[%c1] : memref<2xi64>
    %short = arith.cmpi ne, %arrived, %threads : i64
    scf.if %short {
      %rep = memref.get_global @__dg_race_report : REPORT_T
      %n = memref.load %rep[%c12] : REPORT_T
      %first = arith.cmpi eq, %n, %z : i64
      scf.if %first {
        %blk = func.call @__dg_race_block() : () -> i64
        memref.store %site, %rep[%c13] : REPORT_T
        memref.store %blk, %rep[%c14] : REPORT_T
        memref.store %arrived, %rep[%c15] : REPORT_T
        memref.store %missing, %rep[%c16] : REPORT_T
      }
      %n1 = arith.addi %n, %one : i64
      memref.store %n1, %rep[%c12] : REPORT_T
    }
    return
  }
"""

#: the atomics' records (X, Y, Z) follow W and the reads' A, B, C
ATOMIC_RECORD = 16

TEXT = (_CONTROL + _WORD + _GEOMETRY + _REPORT + _ACCESS) \
    .replace("REPORT_T", f"memref<{REPORT_WORDS}xi64>").replace("REPORT_N", str(REPORT_WORDS)) \
    .replace("SHADOW_BYTES", str(8 * SHADOW_WORDS)).replace("SHADOW_WORDS", str(SHADOW_WORDS)) \
    .replace("ATOMIC_K", str(ATOMIC_RECORD))
