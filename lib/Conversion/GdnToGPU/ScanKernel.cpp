//===- ScanKernel.cpp - products and staging of the chunked scan ----------===//
//
// Workgroup-memory tiles, tensor-core products (ldmatrix fragments,
// mma.sync, pair epilogues) and the copies that stage operands, shared by
// both kernels of the chunked scan.
//
//===----------------------------------------------------------------------===//

#include "ChunkedScan.h"
#include "gdn/Utils/TensorBuilders.h"
#include "gdn/Utils/TensorCoreBuilders.h"

using namespace mlir;
using namespace mlir::gdn;
using namespace mlir::gdn::scan;

Value ScanKernel::carve(ArrayRef<int64_t> shape, Type element,
                        int64_t &offset) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  auto type =
      MemRefType::get(shape, element, MemRefLayoutAttrInterface(), workgroup);
  Value view = memref::ViewOp::create(b, loc, type, sharedBase,
                                      c(b, loc, offset), ValueRange{});
  offset += type.getNumElements() * element.getIntOrFloatBitWidth() / 8;
  return view;
}

HalfTile ScanKernel::carveHalves(int64_t rows, int64_t cols, int64_t &offset) {
  Value halves = carve({rows, cols + kHalfPad}, s.operand, offset);
  return {halves, Value()};
}

HalfTile ScanKernel::carveHalfSlots(int64_t slots, int64_t rows, int64_t cols,
                                    int64_t &offset) {
  Value halves = carve({slots, rows, cols + kHalfPad}, s.operand, offset);
  return {halves, Value()};
}

SmallVector<Value> ScanKernel::loadMatrices(OpBuilder &nb, Location nl,
                                            const HalfTile &tile, Value row,
                                            Value col, int64_t count,
                                            bool transpose) {
  return loadMatrixFragments(nb, nl, tile.halves, tile.at(row, col), count,
                             transpose);
}

// The PTX ISA's fragment layouts of mma.m16n8k16: A registers are the 8 x 8
// quarters (rows +0/+8, depth +0/+8) in the order (0,0), (8,0), (0,8),
// (8,8); B registers the depth halves +0/+8. Lane l gives the address of row
// l % 8 of matrix l / 8.
SmallVector<Value> ScanKernel::fragmentA(OpBuilder &nb, Location nl,
                                         const Term &term, Value m0,
                                         int64_t step) {
  Value k0 = c(nb, nl, step * 16);
  if (term.aDepthMajor)
    return loadMatrices(nb, nl, term.a,
                        add(nb, nl, k0, add(nb, nl, matrixRow, matrixHalf)),
                        add(nb, nl, m0, matrixColumn), 4, /*transpose=*/true);
  return loadMatrices(nb, nl, term.a,
                      add(nb, nl, m0, add(nb, nl, matrixRow, matrixColumn)),
                      add(nb, nl, k0, matrixHalf), 4, /*transpose=*/false);
}

SmallVector<Value> ScanKernel::fragmentB(OpBuilder &nb, Location nl,
                                         const Term &term, Value n0,
                                         int64_t step) {
  Value k0 = c(nb, nl, step * 16);
  if (term.bDepthMajor)
    return loadMatrices(nb, nl, term.b,
                        add(nb, nl, k0, add(nb, nl, matrixRow, matrixColumn)),
                        n0, 2, /*transpose=*/true);
  return loadMatrices(nb, nl, term.b, add(nb, nl, n0, matrixRow),
                      add(nb, nl, k0, matrixColumn), 2, /*transpose=*/false);
}

std::optional<ProductPlan> mlir::gdn::scan::planProduct(int64_t m, int64_t n,
                                                        int64_t warps,
                                                        int64_t maxGroup) {
  int64_t tilesM = m / 16, tilesN = n / 8, tiles = tilesM * tilesN;
  // Each warp owns a rectangle of regionRows x regionCols output tiles,
  // accumulated in groups of groupRows x groupCols: per k-step a group
  // loads one A fragment (512 bytes of workgroup memory) per tile row and
  // one B fragment (256 bytes) per tile column. Workgroup-memory bandwidth
  // bounds the products, so the plan with the fewest fragment bytes wins;
  // maxGroup caps the accumulators a warp holds at once.
  std::optional<ProductPlan> plan;
  int64_t perWarp = tiles % warps == 0 ? tiles / warps : 0;
  for (int64_t rr = 1; perWarp && rr <= std::min(tilesM, perWarp); ++rr) {
    if (tilesM % rr != 0 || perWarp % rr != 0 || tilesN % (perWarp / rr))
      continue;
    int64_t rc = perWarp / rr;
    for (int64_t gr = 1; gr <= rr; ++gr) {
      for (int64_t gc = 1; gc <= rc; ++gc) {
        if (rr % gr != 0 || rc % gc != 0 || gr * gc > maxGroup)
          continue;
        int64_t cost = (rr / gr) * (rc / gc) * (2 * gr + gc);
        if (!plan || cost < plan->cost)
          plan = ProductPlan{rr, rc, gr, gc, cost};
      }
    }
  }
  return plan;
}

void ScanKernel::product(int64_t m, int64_t n, ArrayRef<Term> terms, Init init,
                         PairEpilogue epilogue) {
  products(m, n, {ProductOutput{terms, init, epilogue}});
}

void ScanKernel::products(int64_t m, int64_t n,
                          ArrayRef<ProductOutput> outputs) {
  int64_t tilesN = n / 8;
  int64_t count = outputs.size();
  assert(llvm::all_of(
             outputs,
             [&](const ProductOutput &output) {
               ArrayRef<Term> first = outputs.front().terms;
               return output.terms.size() == first.size() &&
                      llvm::all_of(llvm::zip(output.terms, first), [](auto p) {
                        auto [term, shared] = p;
                        return term.b.halves == shared.b.halves &&
                               term.b.slot == shared.b.slot &&
                               term.depth == shared.depth &&
                               term.bDepthMajor == shared.bDepthMajor;
                      });
             }) &&
         "outputs share their terms' B operands");
  std::optional<ProductPlan> plan =
      planProduct(m, n, s.warps, std::max<int64_t>(1, maxGroup / count));
  if (!plan) {
    for (const ProductOutput &output : outputs)
      productTileLoop(m, n, output.terms, output.init, output.epilogue);
    return;
  }
  // Tile i of a group is (rowBase + groupRows[i], colBase + groupCols[i]).
  Value regionsAcross = c(b, loc, tilesN / plan->regionCols);
  Value rowBase =
      mul(b, loc, arith::DivUIOp::create(b, loc, warp, regionsAcross),
          c(b, loc, plan->regionRows));
  Value colBase =
      mul(b, loc, arith::RemUIOp::create(b, loc, warp, regionsAcross),
          c(b, loc, plan->regionCols));
  // The first output row and column of the tile at `offset` from the
  // warp's rectangle.
  auto firstRow = [&](int64_t offset) {
    return mul(b, loc, add(b, loc, rowBase, c(b, loc, offset)), c(b, loc, 16));
  };
  auto firstColumn = [&](int64_t offset) {
    return mul(b, loc, add(b, loc, colBase, c(b, loc, offset)), c(b, loc, 8));
  };
  // Accumulator coordinates of this lane (PTX ISA, mma.m16n8k16): rows g
  // and g + 8, columns 2t and 2t + 1.
  auto aRow = [&](int64_t offset) {
    return add(b, loc, firstRow(offset), group);
  };
  auto outputColumn = [&](int64_t offset) {
    return add(b, loc, firstColumn(offset), mul(b, loc, quad, c(b, loc, 2)));
  };
  auto accumulateGroup = [&](ArrayRef<int64_t> groupRows,
                             ArrayRef<int64_t> groupCols, int64_t chains) {
    int64_t tiles = groupRows.size();
    // acc[(o * tiles + i) * chains + chain]: output o, tile i.
    SmallVector<SmallVector<Value>> acc;
    for (const ProductOutput &output : outputs) {
      for (int64_t i = 0; i < tiles; ++i) {
        Value row0 = aRow(groupRows[i]);
        Value row1 = add(b, loc, row0, c(b, loc, 8));
        Value col0 = outputColumn(groupCols[i]);
        Value col1 = add(b, loc, col0, c(b, loc, 1));
        acc.push_back(
            {output.init(b, loc, row0, col0), output.init(b, loc, row0, col1),
             output.init(b, loc, row1, col0), output.init(b, loc, row1, col1)});
        for (int64_t chain = 1; chain < chains; ++chain) {
          Value zero = f(b, loc, 0.0f);
          acc.push_back({zero, zero, zero, zero});
        }
      }
    }
    int64_t stepIndex = 0;
    for (size_t t = 0; t < outputs.front().terms.size(); ++t) {
      const Term &shared = outputs.front().terms[t];
      for (int64_t step = 0; step < shared.depth / 16; ++step, ++stepIndex) {
        // B fragments are loaded once for all outputs.
        DenseMap<int64_t, SmallVector<Value>> bFragments;
        for (int64_t o = 0; o < count; ++o) {
          const Term &term = outputs[o].terms[t];
          DenseMap<int64_t, SmallVector<Value>> aFragments;
          for (int64_t i = 0; i < tiles; ++i) {
            SmallVector<Value> &a = aFragments[groupRows[i]];
            if (a.empty())
              a = fragmentA(b, loc, term, firstRow(groupRows[i]), step);
            SmallVector<Value> &bFrag = bFragments[groupCols[i]];
            if (bFrag.empty())
              bFrag = fragmentB(b, loc, term, firstColumn(groupCols[i]), step);
            multiplyAccumulate(
                b, loc, s.operand, a, bFrag,
                acc[(o * tiles + i) * chains + stepIndex % chains]);
          }
        }
      }
    }
    for (int64_t o = 0; o < count; ++o) {
      for (int64_t i = 0; i < tiles; ++i) {
        int64_t first = (o * tiles + i) * chains;
        SmallVector<Value> sum = acc[first];
        for (int64_t chain = 1; chain < chains; ++chain)
          for (int64_t e = 0; e < 4; ++e)
            sum[e] =
                arith::AddFOp::create(b, loc, sum[e], acc[first + chain][e]);
        Value row0 = aRow(groupRows[i]);
        Value row1 = add(b, loc, row0, c(b, loc, 8));
        Value col0 = outputColumn(groupCols[i]);
        outputs[o].epilogue(b, loc, row0, col0, sum[0], sum[1]);
        outputs[o].epilogue(b, loc, row1, col0, sum[2], sum[3]);
      }
    }
  };
  // A group of a single tile would be one chain of dependent mma.sync: two
  // accumulators (even and odd k-steps) halve its latency.
  int64_t chains = plan->groupRows * plan->groupCols == 1 ? 2 : 1;
  for (int64_t gi = 0; gi < plan->regionRows; gi += plan->groupRows) {
    for (int64_t gj = 0; gj < plan->regionCols; gj += plan->groupCols) {
      SmallVector<int64_t> groupRows, groupCols;
      for (int64_t i = 0; i < plan->groupRows; ++i) {
        for (int64_t j = 0; j < plan->groupCols; ++j) {
          groupRows.push_back(gi + i);
          groupCols.push_back(gj + j);
        }
      }
      accumulateGroup(groupRows, groupCols, chains);
    }
  }
}

void ScanKernel::productTileLoop(int64_t m, int64_t n, ArrayRef<Term> terms,
                                 Init init, PairEpilogue epilogue) {
  int64_t tilesN = n / 8, tiles = (m / 16) * tilesN;
  scf::ForOp::create(
      b, loc, warp, c(b, loc, tiles), c(b, loc, s.warps), ValueRange{},
      [&](OpBuilder &nb, Location nl, Value tile, ValueRange) {
        Value tm = arith::DivUIOp::create(nb, nl, tile, c(nb, nl, tilesN));
        Value tn = arith::RemUIOp::create(nb, nl, tile, c(nb, nl, tilesN));
        // Accumulator coordinates of this lane (PTX ISA, mma.m16n8k16):
        // rows g and g + 8, columns 2t and 2t + 1.
        Value m0 = mul(nb, nl, tm, c(nb, nl, 16));
        Value n0 = mul(nb, nl, tn, c(nb, nl, 8));
        Value row0 = add(nb, nl, m0, group);
        Value row1 = add(nb, nl, row0, c(nb, nl, 8));
        Value col0 = add(nb, nl, n0, mul(nb, nl, quad, c(nb, nl, 2)));
        Value col1 = add(nb, nl, col0, c(nb, nl, 1));
        SmallVector<Value> acc = {
            init(nb, nl, row0, col0), init(nb, nl, row0, col1),
            init(nb, nl, row1, col0), init(nb, nl, row1, col1)};
        for (const Term &term : terms) {
          for (int64_t step = 0; step < term.depth / 16; ++step) {
            SmallVector<Value> a = fragmentA(nb, nl, term, m0, step);
            SmallVector<Value> bFrag = fragmentB(nb, nl, term, n0, step);
            multiplyAccumulate(nb, nl, s.operand, a, bFrag, acc);
          }
        }
        epilogue(nb, nl, row0, col0, acc[0], acc[1]);
        epilogue(nb, nl, row1, col0, acc[2], acc[3]);
        scf::YieldOp::create(nb, nl);
      });
}

void ScanKernel::forEachThread(
    OpBuilder &nb, Location nl, int64_t count,
    function_ref<void(OpBuilder &, Location, Value)> body) {
  scf::ForOp::create(nb, nl, tid, c(nb, nl, count), c(nb, nl, s.threads()),
                     ValueRange{},
                     [&](OpBuilder &lb, Location ll, Value i, ValueRange) {
                       body(lb, ll, i);
                       scf::YieldOp::create(lb, ll);
                     });
}

void ScanKernel::setUp(gpu::LaunchOp launch) {
  tid = launch.getThreadIds().x;
  MmaLane lane = mmaLaneOf(b, loc, tid);
  warp = lane.warp;
  group = lane.group;
  quad = lane.quad;
  matrixRow = lane.matrixRow;
  matrixColumn = lane.matrixColumn;
  matrixHalf = lane.matrixHalf;
  sharedBase = dynamicWorkgroupMemory(b, loc);
}

std::pair<Value, Value> ScanKernel::token(OpBuilder &nb, Location nl,
                                          Value start, Value tokens, Value r) {
  Value t = add(nb, nl, start, r);
  Value inside =
      arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, t, tokens);
  Value safe = arith::SelectOp::create(nb, nl, inside, t, c(nb, nl, 0));
  return {safe, inside};
}

SmallVector<ScanKernel::VectorPosition>
ScanKernel::vectorPositions(int64_t rows, int64_t width, Dealing dealing) {
  assert(width % 8 == 0 && "rows are copied in vectors of 8");
  int64_t perRow = width / 8, count = rows * perRow;
  Value thread = dealing.thread ? dealing.thread : tid;
  int64_t threads = dealing.count ? dealing.count : s.threads();
  int64_t perThread = (count + threads - 1) / threads;
  bool ragged = count % threads != 0;
  SmallVector<VectorPosition> positions;
  // Where the threads cover whole rows per round (or a row takes whole
  // rounds), a thread's row and column move by constants from round to
  // round: one address register per operand instead of one per vector,
  // which the compiler would otherwise hoist out of the chunk loop.
  if (!ragged && (threads % perRow == 0 || perRow % threads == 0)) {
    Value firstRow, firstCol;
    if (threads % perRow == 0) {
      firstRow = arith::DivUIOp::create(b, loc, thread, c(b, loc, perRow));
      firstCol =
          mul(b, loc, arith::RemUIOp::create(b, loc, thread, c(b, loc, perRow)),
              c(b, loc, 8));
    } else {
      firstRow = c(b, loc, 0);
      firstCol = mul(b, loc, thread, c(b, loc, 8));
    }
    for (int64_t it = 0; it < perThread; ++it) {
      int64_t vector = it * threads;
      positions.push_back(
          {Value(), add(b, loc, firstRow, c(b, loc, vector / perRow)),
           add(b, loc, firstCol, c(b, loc, vector % perRow * 8))});
    }
    return positions;
  }
  for (int64_t it = 0; it < perThread; ++it) {
    Value i = add(b, loc, thread, c(b, loc, it * threads));
    Value valid;
    if (ragged) {
      // Threads past the end take vector 0 and store nothing.
      valid = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, i,
                                    c(b, loc, count));
      i = arith::SelectOp::create(b, loc, valid, i, c(b, loc, 0));
    }
    Value r = arith::DivUIOp::create(b, loc, i, c(b, loc, perRow));
    Value col =
        mul(b, loc, arith::RemUIOp::create(b, loc, i, c(b, loc, perRow)),
            c(b, loc, 8));
    positions.push_back({valid, r, col});
  }
  return positions;
}

void ScanKernel::copyTokenRows(const HalfTile &to, int64_t width,
                               const TokenRows &rows, Value start, Value tokens,
                               bool partial, Dealing dealing) {
  Type tokenType = nvgpu::DeviceAsyncTokenType::get(b.getContext());
  forEachVector(
      s.chunk, width,
      [&](OpBuilder &nb, Location nl, Value r, Value col) {
        Value t = add(nb, nl, start, r), elements;
        if (partial) {
          auto [clamped, inside] = token(nb, nl, start, tokens, r);
          t = clamped;
          elements = arith::SelectOp::create(nb, nl, inside, c(nb, nl, 8),
                                             c(nb, nl, 0));
        }
        Value from = rows.firstCol ? add(nb, nl, rows.firstCol, col) : col;
        nvgpu::DeviceAsyncCopyOp::create(
            nb, nl, tokenType, to.halves, to.at(r, col), rows.source,
            ValueRange{rows.batch, t, rows.sourceHead, from},
            nb.getIndexAttr(8), elements, nb.getUnitAttr());
      },
      dealing);
}

void ScanKernel::wholeOrPartialChunk(Value start, Value tokens,
                                     function_ref<void(bool)> body) {
  Value whole =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ule,
                            add(b, loc, start, c(b, loc, s.chunk)), tokens);
  auto branches = scf::IfOp::create(b, loc, TypeRange(), whole,
                                    /*withElseRegion=*/true);
  for (bool partial : {false, true}) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint((partial ? branches.elseBlock() : branches.thenBlock())
                            ->getTerminator());
    body(partial);
  }
}

void ScanKernel::ifValid(const VectorPosition &position,
                         function_ref<void(OpBuilder &, Location)> body) {
  if (!position.valid) {
    body(b, loc);
    return;
  }
  scf::IfOp::create(b, loc, position.valid, [&](OpBuilder &nb, Location nl) {
    body(nb, nl);
    scf::YieldOp::create(nb, nl);
  });
}

void ScanKernel::stageVectors(
    int64_t rows, int64_t width,
    function_ref<Value(OpBuilder &, Location, Value, Value)> loadVector,
    function_ref<void(OpBuilder &, Location, Value, Value, Value)>
        storeVector) {
  SmallVector<VectorPosition> positions = vectorPositions(rows, width);
  SmallVector<Value> loaded;
  for (const VectorPosition &position : positions)
    loaded.push_back(loadVector(b, loc, position.row, position.col));
  for (size_t i = 0; i < positions.size(); ++i)
    ifValid(positions[i], [&](OpBuilder &nb, Location nl) {
      storeVector(nb, nl, positions[i].row, positions[i].col, loaded[i]);
    });
}

void ScanKernel::forEachVector(
    int64_t rows, int64_t width,
    function_ref<void(OpBuilder &, Location, Value, Value)> copy,
    Dealing dealing) {
  for (const VectorPosition &position : vectorPositions(rows, width, dealing))
    ifValid(position, [&](OpBuilder &nb, Location nl) {
      copy(nb, nl, position.row, position.col);
    });
}
