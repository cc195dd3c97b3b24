//===- OpChecks.cpp - the rules each instruction of a plan obeys ----------===//
//
// The dialect's verifier checks these facts in the compiler; the runtime
// checks them again on load, because a plan file is input: a kernel may then
// trust its operand shapes and never index outside its buffers.
//
//===----------------------------------------------------------------------===//

#include "OpChecks.h"
#include "OpChecker.h"

#include <algorithm>
#include <set>

using namespace braid;
using namespace braid::rt;
using namespace braid::rt::opcheck;

namespace {

void sameShapeUnary(Checker &c) {
  c.allF32();
  c.shape(c.out(0), c.in(0).shape);
}

void sameShapeBinary(Checker &c) {
  c.allF32();
  c.shape(c.in(1), c.in(0).shape);
  c.shape(c.out(0), c.in(0).shape);
}

void softmaxLike(Checker &c, size_t operands, int64_t dim,
                 bool causal = false) {
  c.allF32();
  for (size_t i = 1; i < operands; ++i)
    c.shape(c.in(i), c.in(0).shape);
  c.shape(c.out(0), c.in(0).shape);
  c.dim(c.in(0), dim);
  // A folded causal mask: along the last dimension, over the last two.
  const auto &s = c.in(0).shape;
  if (causal && (s.size() < 2 || dim != int64_t(s.size()) - 1 ||
                 s[s.size() - 1] != s[s.size() - 2]))
    c.fail("causal needs dim to be the last dimension and the last two "
           "dimensions to be equal");
}

void lossForward(Checker &c) {
  c.f32(c.in(0));
  c.index(c.in(1));
  c.f32(c.out(0));
  if (c.in(0).shape.size() != 2)
    c.fail("the input must be [N, C]");
  c.shape(c.in(1), {c.in(0).shape[0]});
  c.shape(c.out(0), {});
}

void lossBackward(Checker &c) {
  c.f32(c.in(0));
  c.f32(c.in(1));
  c.index(c.in(2));
  c.f32(c.out(0));
  c.shape(c.in(0), {});
  if (c.in(1).shape.size() != 2)
    c.fail("the input must be [N, C]");
  c.shape(c.in(2), {c.in(1).shape[0]});
  c.shape(c.out(0), c.in(1).shape);
}

void reduce(Checker &c, const std::vector<int64_t> &dims, bool keep) {
  c.allF32();
  std::set<int64_t> reduced;
  for (int64_t d : dims)
    if (!reduced.insert(c.dim(c.in(0), d)).second)
      c.fail("dimension " + std::to_string(d) + " is reduced twice");
  std::vector<int64_t> expected;
  for (size_t d = 0; d < c.in(0).shape.size(); ++d) {
    if (!reduced.count(d))
      expected.push_back(c.in(0).shape[d]);
    else if (keep)
      expected.push_back(1);
  }
  c.shape(c.out(0), expected);
}

/// `shape` through matmul permutation `name` (checked: a permutation whose
/// matrices keep a unit-stride dimension, as getMatmulGeometry needs).
std::vector<int64_t>
matmulPermuted(Checker &c, const char *name, const std::vector<int64_t> &shape,
               const std::optional<std::vector<int64_t>> &perm, bool result) {
  if (!perm)
    return shape;
  int64_t rank = shape.size();
  std::vector<bool> seen(shape.size(), false);
  bool valid = int64_t(perm->size()) == rank;
  for (int64_t p : *perm) {
    valid = valid && p >= 0 && p < rank && !seen[p];
    if (valid)
      seen[p] = true;
  }
  if (!valid)
    c.fail(std::string(name) + " " + dimsOf(*perm) +
           " is not a permutation of " + std::to_string(rank) + " dimensions");
  if (result ? perm->back() != rank - 1 && perm->back() != rank - 2
             : (*perm)[rank - 1] != rank - 1 && (*perm)[rank - 2] != rank - 1)
    c.fail(std::string(name) + " " + dimsOf(*perm) +
           (result ? " must store one of the product's last two dimensions "
                     "last"
                   : " must put the last dimension at one of the last two "
                     "places"));
  std::vector<int64_t> out;
  for (int64_t p : *perm)
    out.push_back(shape[p]);
  return out;
}

/// `shape` cut to matmul slice `name` (checked: [dim, offset, size], a
/// range of a dimension that the product reads as a batch dimension through
/// `perm`, checked before), or as it is.
std::vector<int64_t>
matmulSliced(Checker &c, const char *name, std::vector<int64_t> shape,
             const std::optional<std::vector<int64_t>> &slice,
             const std::optional<std::vector<int64_t>> &perm) {
  if (!slice)
    return shape;
  int64_t rank = shape.size();
  if (slice->size() != 3)
    c.fail(std::string(name) + " " + dimsOf(*slice) +
           " is not [dim, offset, size]");
  int64_t dim = (*slice)[0], offset = (*slice)[1], size = (*slice)[2];
  if (dim < 0 || dim >= rank || offset < 0 || size < 1 ||
      offset > shape[dim] - size)
    c.fail(std::string(name) + " " + dimsOf(*slice) +
           " is not a range of a dimension of " + dimsOf(shape));
  int64_t at =
      perm ? std::find(perm->begin(), perm->end(), dim) - perm->begin() : dim;
  if (at >= rank - 2)
    c.fail(std::string(name) + " " + dimsOf(*slice) +
           " slices a dimension the product reads as a matrix dimension");
  shape[dim] = size;
  return shape;
}

void matmul(Checker &c, const ops::MatmulAttrs &attrs) {
  c.allF32();
  c.noOverlap();
  if (c.in(0).shape.size() < 2 || c.in(1).shape.size() < 2)
    c.fail("operands must have rank 2 or more");
  // The permutations checked on the whole operands, then read the slices.
  matmulPermuted(c, "lhs_permutation", c.in(0).shape, attrs.lhs_permutation,
                 false);
  matmulPermuted(c, "rhs_permutation", c.in(1).shape, attrs.rhs_permutation,
                 false);
  std::vector<int64_t> a =
      matmulPermuted(c, "lhs_permutation",
                     matmulSliced(c, "lhs_slice", c.in(0).shape,
                                  attrs.lhs_slice, attrs.lhs_permutation),
                     attrs.lhs_permutation, false);
  std::vector<int64_t> b =
      matmulPermuted(c, "rhs_permutation",
                     matmulSliced(c, "rhs_slice", c.in(1).shape,
                                  attrs.rhs_slice, attrs.rhs_permutation),
                     attrs.rhs_permutation, false);
  bool ta = attrs.transpose_a, tb = attrs.transpose_b;
  size_t ra = a.size(), rb = b.size();
  int64_t m = a[ra - (ta ? 1 : 2)], k = a[ra - (ta ? 2 : 1)];
  int64_t kb = b[rb - (tb ? 1 : 2)], n = b[rb - (tb ? 2 : 1)];
  if (k != kb)
    c.fail("contraction sizes differ: " + std::to_string(k) + " and " +
           std::to_string(kb));
  std::vector<int64_t> lead(a.begin(), a.end() - 2);
  if (rb != 2 && std::vector<int64_t>(b.begin(), b.end() - 2) != lead)
    c.fail("batch dimensions differ");
  lead.push_back(m);
  lead.push_back(n);
  c.shape(c.out(0), matmulPermuted(c, "result_permutation", lead,
                                   attrs.result_permutation, true));
}

void biasAdd(Checker &c) {
  c.allF32();
  const std::vector<int64_t> &x = c.in(0).shape, &bias = c.in(1).shape;
  if (x.empty())
    c.fail("the input must have rank 1 or more");
  if (bias.empty() || bias.size() > x.size())
    c.fail("the bias must have rank 1 to " + std::to_string(x.size()) +
           " (the input's)");
  // The bias's dimensions are the input's last ones.
  c.shape(c.in(1), std::vector<int64_t>(x.end() - bias.size(), x.end()));
  c.shape(c.out(0), x);
}

/// braid.gelu (`tensors` 1) and its backward (2): the tensors of one
/// shape, then an optional bias along the last dimension.
void gelu(Checker &c, size_t tensors) {
  size_t count = c.instr.operands.size();
  if (count != tensors && count != tensors + 1)
    c.fail("expected " + std::to_string(tensors) + " operands, or " +
           std::to_string(tensors + 1) + " with a bias, got " +
           std::to_string(count));
  c.allF32();
  for (size_t i = 1; i < tensors; ++i)
    c.shape(c.in(i), c.in(0).shape);
  c.shape(c.out(0), c.in(0).shape);
  if (count == tensors)
    return;
  if (c.in(0).shape.empty())
    c.fail("a bias needs an input of rank 1 or more");
  c.shape(c.in(tensors), {c.in(0).shape.back()});
}

void where(Checker &c) {
  if (c.in(0).dtype != DType::I1)
    c.fail("the condition '" + c.in(0).name +
           "' must be an i1 tensor, but is " + shapeOf(c.in(0)));
  for (size_t i = 1; i < 3; ++i) {
    c.f32(c.in(i));
    c.shape(c.in(i), c.in(0).shape);
  }
  c.f32(c.out(0));
  c.shape(c.out(0), c.in(0).shape);
}

/// braid.attention (first = 0) and its backward (first = 1, after the
/// output's gradient): query, key and value at first, first + 1, first + 2.
void attention(Checker &c, size_t first) {
  const Buffer &q = c.in(first), &k = c.in(first + 1), &v = c.in(first + 2);
  for (const Buffer *b : {&q, &k, &v}) {
    c.f32(*b);
    if (b->shape.size() != 4)
      c.fail("'" + b->name +
             "' must be [batch, heads, sequence, head size], "
             "but is " +
             shapeOf(*b));
  }
  int64_t batch = q.shape[0], heads = q.shape[1], seq = q.shape[2];
  int64_t kvHeads = k.shape[1], kvSeq = k.shape[2], valueDim = v.shape[3];
  c.shape(k, {batch, kvHeads, kvSeq, q.shape[3]});
  c.shape(v, {batch, kvHeads, kvSeq, valueDim});
  if (kvHeads <= 0 || heads % kvHeads)
    c.fail(std::to_string(heads) + " query heads do not group over " +
           std::to_string(kvHeads) + " key/value heads");
  std::vector<int64_t> rows = {batch, heads, seq};
  const Buffer &lse = first ? c.in(5) : c.out(1);
  if (lse.dtype != DType::F32)
    c.fail("the logsumexp '" + lse.name + "' must be f32, but is " +
           shapeOf(lse));
  c.shape(lse, rows);
  const Buffer &o = first ? c.in(4) : c.out(0);
  c.f32(o);
  c.shape(o, {batch, heads, seq, valueDim});
  if (!first)
    return;
  c.shape(c.in(0), o.shape);
  for (size_t i = 0; i < 3; ++i) {
    c.f32(c.out(i));
    c.shape(c.out(i), c.in(1 + i).shape);
  }
}

void dropoutMask(Checker &c) {
  if (c.in(0).dtype != DType::F32 || !c.in(0).shape.empty())
    c.fail("the step '" + c.in(0).name + "' must be an f32 scalar, but is " +
           shapeOf(c.in(0)));
  if (c.in(1).dtype != DType::I64 || !c.in(1).shape.empty())
    c.fail("the rank '" + c.in(1).name + "' must be an i64 scalar, but is " +
           shapeOf(c.in(1)));
  if (c.out(0).dtype != DType::I1)
    c.fail("the mask '" + c.out(0).name + "' must be i1, but is " +
           shapeOf(c.out(0)));
  double keep = c.instr.as<ops::DropoutMaskAttrs>().keep;
  if (!(keep >= 0.0 && keep <= 1.0))
    c.fail("keep probability " + std::to_string(keep) + " is not in [0, 1]");
}

void causalMask(Checker &c) {
  sameShapeUnary(c);
  const auto &s = c.in(0).shape;
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    c.fail("the last two dimensions must be equal");
}

/// Checks that gamma spans trailing dimensions of x; the leading ones.
std::vector<int64_t> normLead(Checker &c, const Buffer &x, const Buffer &g) {
  if (g.shape.empty() || g.shape.size() > x.shape.size() ||
      !std::equal(g.shape.rbegin(), g.shape.rend(), x.shape.rbegin()))
    c.fail("gamma " + shapeOf(g) + " must span trailing dimensions of " +
           shapeOf(x));
  return std::vector<int64_t>(x.shape.begin(), x.shape.end() - g.shape.size());
}

void layerNorm(Checker &c) {
  c.allF32();
  const Buffer &x = c.in(0), &g = c.in(1);
  std::vector<int64_t> lead = normLead(c, x, g);
  c.shape(c.in(2), g.shape);
  c.shape(c.out(0), x.shape);
  c.shape(c.out(1), lead);
  c.shape(c.out(2), lead);
}

void layerNormBackward(Checker &c) {
  c.allF32();
  const Buffer &x = c.in(1), &g = c.in(4);
  c.shape(c.in(0), x.shape);
  std::vector<int64_t> lead = normLead(c, x, g);
  c.shape(c.in(2), lead);
  c.shape(c.in(3), lead);
  c.shape(c.out(0), x.shape);
  c.shape(c.out(1), g.shape);
  c.shape(c.out(2), g.shape);
}

void embedding(Checker &c) {
  c.f32(c.in(0));
  c.index(c.in(1));
  c.f32(c.out(0));
  if (c.in(0).shape.size() != 2)
    c.fail("the table must be [V, D]");
  std::vector<int64_t> expected = c.in(1).shape;
  expected.push_back(c.in(0).shape[1]);
  c.shape(c.out(0), expected);
}

/// `padding`: the padding row, if any, of a table of `rows` rows.
void embeddingBackward(Checker &c, std::optional<int64_t> padding,
                       int64_t parts = 1) {
  c.f32(c.in(0));
  c.index(c.in(1));
  c.f32(c.out(0));
  if (c.out(0).shape.size() != 2)
    c.fail("the table gradient must be [V, D]");
  std::vector<int64_t> expected = c.in(1).shape;
  expected.push_back(c.out(0).shape[1]);
  c.shape(c.in(0), expected);
  int64_t rows = c.out(0).shape[0] * std::max<int64_t>(parts, 1);
  if (padding && (*padding < 0 || *padding >= rows))
    c.fail("padding_idx " + std::to_string(*padding) +
           " is not a row of the table of " + std::to_string(rows) + " rows");
}

/// A shard op's rank index (a tensor<i64>) and `parts`.
void shardIndex(Checker &c, const Buffer &index, int64_t parts) {
  if (index.dtype != DType::I64)
    c.fail("the rank index '" + index.name + "' must be i64");
  c.shape(index, {});
  if (parts < 1)
    c.fail("parts must be positive, but is " + std::to_string(parts));
}

void embeddingShard(Checker &c, int64_t parts) {
  embedding(c);
  shardIndex(c, c.in(2), parts);
}

void embeddingShardBackward(Checker &c, int64_t parts,
                            std::optional<int64_t> padding) {
  embeddingBackward(c, padding, parts);
  shardIndex(c, c.in(2), parts);
}

/// `stats` must be [P, rows, 3] (P == `parts` when given).
void shardStats(Checker &c, const Buffer &stats, int64_t rows,
                int64_t parts = -1) {
  c.f32(stats);
  if (stats.shape.size() != 3 || stats.shape[1] != rows ||
      stats.shape[2] != 3 || (parts >= 0 && stats.shape[0] != parts))
    c.fail("'" + stats.name + "' is " + shapeOf(stats) + ", but must be [" +
           (parts >= 0 ? std::to_string(parts) : std::string("P")) + ", " +
           std::to_string(rows) + ", 3]");
}

void crossEntropyShardStats(Checker &c, int64_t parts) {
  c.f32(c.in(0));
  c.index(c.in(1));
  if (c.in(0).shape.size() != 2)
    c.fail("the logits must be [N, C]");
  c.shape(c.in(1), {c.in(0).shape[0]});
  shardIndex(c, c.in(2), parts);
  shardStats(c, c.out(0), c.in(0).shape[0], 1);
}

void crossEntropyShardLoss(Checker &c) {
  shardStats(c, c.in(0), c.in(0).shape.size() == 3 ? c.in(0).shape[1] : 0);
  c.f32(c.out(0));
  c.shape(c.out(0), {});
}

void crossEntropyShardBackward(Checker &c) {
  lossBackward(c);
  shardStats(c, c.in(3), c.in(1).shape[0]);
  shardIndex(c, c.in(4), 1);
}

void shardSlice(Checker &c, const ops::ShardSliceAttrs &a) {
  const Buffer &x = c.in(0);
  shardIndex(c, c.in(1), a.parts);
  int64_t d = c.dim(x, a.dim);
  if (c.out(0).dtype != x.dtype)
    c.fail("element types differ");
  if (x.shape[d] % a.parts)
    c.fail("dimension " + std::to_string(d) + " of " + shapeOf(x) +
           " does not divide into " + std::to_string(a.parts) + " parts");
  std::vector<int64_t> expected = x.shape;
  expected[d] /= a.parts;
  c.shape(c.out(0), expected);
}

void shardConcat(Checker &c, const ops::ShardConcatAttrs &a) {
  size_t n = c.instr.operands.size();
  if (n < 2)
    c.fail("expected pieces, a rank index and one result");
  const Buffer &y = c.out(0), &first = c.in(0);
  int64_t pieces = int64_t(n - 1);
  shardIndex(c, c.in(n - 1), pieces);
  int64_t d = c.dim(first, a.dim);
  if (int64_t(a.shifts.size()) != pieces)
    c.fail(std::to_string(a.shifts.size()) + " shifts for " +
           std::to_string(pieces) + " pieces");
  std::set<int64_t> blocks;
  for (int64_t shift : a.shifts)
    if (!blocks.insert(((shift % pieces) + pieces) % pieces).second)
      c.fail("shift " + std::to_string(shift) +
             " fills a block another shift fills");
  for (size_t k = 0; k + 1 < n; ++k)
    if (c.in(k).dtype != y.dtype || c.in(k).shape != first.shape)
      c.fail("piece " + shapeOf(c.in(k)) + " differs from " + shapeOf(first));
  std::vector<int64_t> expected = first.shape;
  expected[d] *= pieces;
  c.shape(y, expected);
}

void reshape(Checker &c) {
  if (c.in(0).dtype != c.out(0).dtype ||
      c.in(0).numElements() != c.out(0).numElements())
    c.fail("cannot reshape " + shapeOf(c.in(0)) + " to " + shapeOf(c.out(0)));
}

void transpose(Checker &c, const std::vector<int64_t> &perm) {
  const Buffer &x = c.in(0);
  if (perm.size() != x.shape.size())
    c.fail("the permutation has the wrong length");
  std::vector<int64_t> expected;
  std::set<int64_t> seen;
  for (int64_t p : perm) {
    if (!seen.insert(c.dim(x, p)).second)
      c.fail("the permutation repeats " + std::to_string(p));
    expected.push_back(x.shape[p]);
  }
  if (c.out(0).dtype != x.dtype)
    c.fail("element types differ");
  c.shape(c.out(0), expected);
}

void broadcast(Checker &c, const std::vector<int64_t> &dims) {
  const Buffer &x = c.in(0), &y = c.out(0);
  if (y.dtype != x.dtype || y.shape.size() != x.shape.size() + dims.size())
    c.fail("cannot broadcast " + shapeOf(x) + " to " + shapeOf(y));
  std::set<int64_t> added;
  for (int64_t d : dims)
    if (!added.insert(c.dim(y, d)).second)
      c.fail("dimension " + std::to_string(d) + " is added twice");
  size_t k = 0;
  for (size_t d = 0; d < y.shape.size(); ++d)
    if (!added.count(d) && y.shape[d] != x.shape[k++])
      c.fail("cannot broadcast " + shapeOf(x) + " to " + shapeOf(y));
}

void slice(Checker &c, const ops::SliceAttrs &attrs) {
  const Buffer &x = c.in(0), &y = c.out(0);
  const auto &offsets = attrs.offsets;
  std::vector<int64_t> strides =
      attrs.strides ? *attrs.strides : std::vector<int64_t>(x.shape.size(), 1);
  if (y.dtype != x.dtype || offsets.size() != x.shape.size() ||
      strides.size() != x.shape.size() || y.shape.size() != x.shape.size())
    c.fail("bad slice of " + shapeOf(x) + " to " + shapeOf(y));
  for (size_t d = 0; d < x.shape.size(); ++d)
    if (offsets[d] < 0 || strides[d] <= 0 ||
        (y.shape[d] > 0 &&
         offsets[d] + (y.shape[d] - 1) * strides[d] >= x.shape[d]))
      c.fail("the slice leaves " + shapeOf(x) + " along dimension " +
             std::to_string(d));
}

void concat(Checker &c, int64_t dim) {
  if (c.instr.operands.empty())
    c.fail("expected operands and one result");
  const Buffer &y = c.out(0);
  int64_t d = c.dim(y, dim);
  int64_t total = 0;
  for (size_t i = 0; i < c.instr.operands.size(); ++i) {
    const Buffer &x = c.in(i);
    if (x.dtype != y.dtype || x.shape.size() != y.shape.size())
      c.fail("cannot concatenate " + shapeOf(x) + " into " + shapeOf(y));
    for (size_t k = 0; k < y.shape.size(); ++k)
      if (int64_t(k) != d && x.shape[k] != y.shape[k])
        c.fail("cannot concatenate " + shapeOf(x) + " into " + shapeOf(y));
    total += x.shape[d];
  }
  if (total != y.shape[d])
    c.fail("the inputs add up to " + std::to_string(total) +
           " along dimension " + std::to_string(d));
}

/// An update's scalars after its `fixed` operands: the scheduled learning
/// rate where the `lr` attribute is absent, then the gradient scale where
/// there is one (one more operand).
template <typename Attrs> void updateScalars(Checker &c, size_t fixed) {
  bool constant = c.instr.as<Attrs>().lr.has_value();
  size_t least = fixed + (constant ? 0 : 1), count = c.instr.operands.size();
  if (count != least && count != least + 1)
    c.fail("expected " + std::to_string(least) + " operands (" +
           (constant ? "a constant lr"
                     : "a scheduled lr operand last, no lr attribute") +
           "), or one more for a gradient scale, got " + std::to_string(count));
  if (c.instr.results.size() != size_t(c.instr.info->numResults))
    c.fail("expected " + std::to_string(c.instr.info->numResults) +
           " results, got " + std::to_string(c.instr.results.size()));
  for (size_t i = fixed; i < count; ++i)
    c.shape(c.in(i), {});
}

void sgd(Checker &c) {
  updateScalars<ops::SgdAttrs>(c, 3);
  c.allF32();
  for (size_t i = 1; i < 3; ++i)
    c.shape(c.in(i), c.in(0).shape);
  c.shape(c.out(0), c.in(0).shape);
  c.shape(c.out(1), c.in(0).shape);
}

void adamw(Checker &c) {
  updateScalars<ops::AdamWAttrs>(c, 5);
  c.allF32();
  for (size_t i = 1; i < 4; ++i)
    c.shape(c.in(i), c.in(0).shape);
  c.shape(c.in(4), {});
  for (size_t i = 0; i < 3; ++i)
    c.shape(c.out(i), c.in(0).shape);
}

void lion(Checker &c) {
  updateScalars<ops::LionAttrs>(c, 3);
  c.allF32();
  for (size_t i = 1; i < 3; ++i)
    c.shape(c.in(i), c.in(0).shape);
  for (size_t i = 0; i < 2; ++i)
    c.shape(c.out(i), c.in(0).shape);
}

/// The rules of each compute op, by opcode. Whether an op may write over
/// an operand is the op table's business (checkOp).
void checkKernel(Checker &c) {
  const Instr &instr = c.instr;
  switch (instr.opcode) {
  case Opcode::Matmul:
    return matmul(c, instr.as<ops::MatmulAttrs>());
  case Opcode::Add:
  case Opcode::Sub:
  case Opcode::Mul:
  case Opcode::Div:
  case Opcode::ReluBackward:
  case Opcode::GeluBackward:
    return gelu(c, 2);
  case Opcode::UnaryBackward: {
    ops::UnaryKind k = instr.as<ops::UnaryBackwardAttrs>().kind;
    if (!ops::hasBackward(k))
      c.fail(std::string("unary_backward has no form for '") +
             ops::stringifyUnaryKind(k) + "' (only tanh, sigmoid and silu)");
    return sameShapeBinary(c);
  }
  case Opcode::Scale:
  case Opcode::Cast:
  case Opcode::Relu:
  case Opcode::Gelu:
    return gelu(c, 1);
  case Opcode::Unary:
  case Opcode::Pow:
    return sameShapeUnary(c);
  case Opcode::Where:
    return where(c);
  case Opcode::DropoutMask:
    return dropoutMask(c);
  case Opcode::BiasAdd:
    return biasAdd(c);
  case Opcode::ReduceSum: {
    const auto &a = instr.as<ops::ReduceSumAttrs>();
    return reduce(c, a.dims, a.keep_dims);
  }
  case Opcode::ReduceMean: {
    const auto &a = instr.as<ops::ReduceMeanAttrs>();
    return reduce(c, a.dims, a.keep_dims);
  }
  case Opcode::Softmax:
    return softmaxLike(c, 1, instr.as<ops::SoftmaxAttrs>().dim,
                       instr.as<ops::SoftmaxAttrs>().causal);
  case Opcode::LogSoftmax:
    return softmaxLike(c, 1, instr.as<ops::LogSoftmaxAttrs>().dim);
  case Opcode::SoftmaxBackward:
    return softmaxLike(c, 2, instr.as<ops::SoftmaxBackwardAttrs>().dim,
                       instr.as<ops::SoftmaxBackwardAttrs>().causal);
  case Opcode::LogSoftmaxBackward:
    return softmaxLike(c, 2, instr.as<ops::LogSoftmaxBackwardAttrs>().dim);
  case Opcode::CausalMask:
    return causalMask(c);
  case Opcode::Attention:
    return attention(c, 0);
  case Opcode::AttentionBackward:
    return attention(c, 1);
  case Opcode::LayerNorm:
    return layerNorm(c);
  case Opcode::LayerNormBackward:
    return layerNormBackward(c);
  case Opcode::NllLoss:
  case Opcode::CrossEntropy:
    return lossForward(c);
  case Opcode::NllLossBackward:
  case Opcode::CrossEntropyBackward:
    return lossBackward(c);
  case Opcode::CrossEntropyShardStats:
    return crossEntropyShardStats(
        c, instr.as<ops::CrossEntropyShardStatsAttrs>().parts);
  case Opcode::CrossEntropyShardLoss:
    return crossEntropyShardLoss(c);
  case Opcode::CrossEntropyShardBackward:
    return crossEntropyShardBackward(c);
  case Opcode::Embedding:
    return embedding(c);
  case Opcode::EmbeddingBackward:
    return embeddingBackward(
        c, instr.as<ops::EmbeddingBackwardAttrs>().padding_idx);
  case Opcode::EmbeddingShard:
    return embeddingShard(c, instr.as<ops::EmbeddingShardAttrs>().parts);
  case Opcode::EmbeddingShardBackward:
    return embeddingShardBackward(
        c, instr.as<ops::EmbeddingShardBackwardAttrs>().parts,
        instr.as<ops::EmbeddingShardBackwardAttrs>().padding_idx);
  case Opcode::Reshape:
    return reshape(c);
  case Opcode::Transpose:
    return transpose(c, instr.as<ops::TransposeAttrs>().permutation);
  case Opcode::Broadcast:
    return broadcast(c, instr.as<ops::BroadcastAttrs>().dims);
  case Opcode::Slice:
    return slice(c, instr.as<ops::SliceAttrs>());
  case Opcode::ShardSlice:
    return shardSlice(c, instr.as<ops::ShardSliceAttrs>());
  case Opcode::Concat:
    return concat(c, instr.as<ops::ConcatAttrs>().dim);
  case Opcode::ShardConcat:
    return shardConcat(c, instr.as<ops::ShardConcatAttrs>());
  case Opcode::Constant:
    if (instr.as<ops::ConstantAttrs>().value.size() != c.out(0).bytes)
      c.fail("the constant's data does not fill " + shapeOf(c.out(0)));
    return;
  case Opcode::Fill:
    return c.f32(c.out(0));
  case Opcode::Sgd:
    return sgd(c);
  case Opcode::AdamW:
    return adamw(c);
  case Opcode::Lion:
    return lion(c);
  case Opcode::SumSquares:
    if (c.instr.operands.empty())
      c.fail("needs at least one input");
    c.allF32();
    return c.shape(c.out(0), {});
  case Opcode::ClipCoefficient:
    c.allF32();
    c.shape(c.in(0), {});
    return c.shape(c.out(0), {});
    BRAID_CASE_NON_KERNEL_OPCODES
    c.fail("is not a kernel");
  }
}

} // namespace

void braid::rt::checkComputeTypes(const Plan &plan, const char *backend,
                                  bool half) {
  for (const Stream &s : plan.streams)
    for (const Instr &i : s.instrs)
      for (const auto *ids : {&i.operands, &i.results})
        for (uint32_t id : *ids) {
          const Buffer &b = plan.buffers[id];
          if (b.dtype == DType::F32 || b.dtype == DType::I32 ||
              b.dtype == DType::I64 || b.dtype == DType::I1 ||
              (half && (b.dtype == DType::BF16 || b.dtype == DType::F16)))
            continue;
          throw PlanError(
              i.describe() + ": the " + std::string(backend) +
              " backend computes in f32" + (half ? ", bf16 and f16" : "") +
              " (with i32 or i64 indices), but '" + b.name + "' is " +
              shapeOf(b) + "; --backend=sim simulates other types");
        }
}

/// "lhs, rhs" from a list ended by "".
static std::string joinNames(const char *const *names) {
  std::string s;
  for (; **names; ++names)
    s += (s.empty() ? "" : ", ") + std::string(*names);
  return s;
}

void braid::rt::checkOp(const Plan &plan, const Instr &instr) {
  Checker c{plan, instr};
  // The counts the op table gives (from the ODS), then the op's rules.
  const ops::OpInfo &info = *instr.info;
  if ((info.numOperands >= 0 &&
       instr.operands.size() != size_t(info.numOperands)) ||
      (info.numResults >= 0 && instr.results.size() != size_t(info.numResults)))
    c.fail("expected " + std::to_string(info.numOperands) + " operands (" +
           joinNames(info.operandNames) + ") and " +
           std::to_string(info.numResults) + " results (" +
           joinNames(info.resultNames) + "), got " +
           std::to_string(instr.operands.size()) + " and " +
           std::to_string(instr.results.size()));
  if (info.isCollective())
    return checkCollective(c);
  checkKernel(c);
  // A result may overwrite an operand, element for element, only where the
  // op declares it in place (`inPlaceOperands` in the ODS), or share its
  // bytes where the op is a view (Braid_View: reshape).
  for (size_t r = 0; r < instr.results.size(); ++r)
    for (size_t o = 0; o < instr.operands.size(); ++o) {
      const Buffer &a = plan.buffers[instr.results[r]];
      const Buffer &b = plan.buffers[instr.operands[o]];
      if (!a.bytes || !b.bytes || a.offset >= b.offset + b.bytes ||
          b.offset >= a.offset + a.bytes)
        continue;
      bool inPlace =
          (r < info.numInPlace && info.inPlace[r] == int8_t(o)) || info.isView;
      if (!inPlace)
        c.fail("result '" + a.name + "' overlaps operand '" + b.name + "'");
      if (a.offset != b.offset || a.bytes != b.bytes)
        c.fail("result '" + a.name + "' partly overlaps operand '" + b.name +
               "'");
    }
}
