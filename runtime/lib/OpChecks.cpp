//===- OpChecks.cpp - the rules each instruction of a plan obeys ----------===//
//
// The dialect's verifier checks these facts in the compiler; the runtime
// checks them again on load, because a plan file is input: a kernel may then
// trust its operand shapes and never index outside its buffers.
//
//===----------------------------------------------------------------------===//

#include "OpChecks.h"

#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

using namespace braid::rt;

namespace {

std::string shapeOf(const Buffer &b) {
  std::string s = "[";
  for (size_t i = 0; i < b.shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(b.shape[i]);
  return s + "] " + dtypeName(b.dtype);
}

std::string dimsOf(const std::vector<int64_t> &dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    s += (i ? "x" : "") + std::to_string(dims[i]);
  return s + "]";
}

/// The checks of one instruction, with its buffers at hand.
struct Checker {
  const Plan &plan;
  const Instr &instr;

  [[noreturn]] void fail(const std::string &message) const {
    throw PlanError(instr.describe() + ": " + message);
  }
  const Buffer &in(size_t i) const { return plan.buffers[instr.operands[i]]; }
  const Buffer &out(size_t i) const { return plan.buffers[instr.results[i]]; }

  void counts(size_t operands, size_t results) const {
    if (instr.operands.size() != operands || instr.results.size() != results)
      fail("expected " + std::to_string(operands) + " operands and " +
           std::to_string(results) + " results, got " +
           std::to_string(instr.operands.size()) + " and " +
           std::to_string(instr.results.size()));
  }
  /// A floating-point tensor. Which float types a backend computes in is
  /// its own check (checkComputeTypes): the simulator takes them all.
  void f32(const Buffer &b) const {
    if (!isFloat(b.dtype))
      fail("'" + b.name + "' must be a floating-point tensor, but is " +
           shapeOf(b));
  }
  void index(const Buffer &b) const {
    if (b.dtype != DType::I32 && b.dtype != DType::I64)
      fail("'" + b.name + "' must hold i32 or i64 indices, but is " +
           shapeOf(b));
  }
  void shape(const Buffer &b, const std::vector<int64_t> &expected) const {
    if (b.shape != expected)
      fail("'" + b.name + "' is " + shapeOf(b) + ", expected shape " +
           dimsOf(expected));
  }
  void allF32() const {
    for (size_t i = 0; i < instr.operands.size(); ++i)
      f32(in(i));
    for (size_t i = 0; i < instr.results.size(); ++i)
      f32(out(i));
  }
  int64_t dim(const Buffer &b, int64_t d) const {
    int64_t rank = b.shape.size();
    if (d < 0 || d >= rank)
      fail("dimension " + std::to_string(d) + " is out of range for '" +
           b.name + "' of rank " + std::to_string(rank));
    return d;
  }
  /// Operands and results may not overlap, except where an op allows it.
  void noOverlap() const {
    for (uint32_t r : instr.results)
      for (uint32_t o : instr.operands) {
        const Buffer &a = plan.buffers[r], &b = plan.buffers[o];
        if (a.bytes && b.bytes && a.offset < b.offset + b.bytes &&
            b.offset < a.offset + a.bytes)
          fail("result '" + a.name + "' overlaps operand '" + b.name + "'");
      }
  }
  const Group &group() const { return plan.groups[instr.group]; }
};

using Rule = std::function<void(Checker &)>;

void sameShapeUnary(Checker &c) {
  c.counts(1, 1);
  c.allF32();
  c.shape(c.out(0), c.in(0).shape);
}

void sameShapeBinary(Checker &c) {
  c.counts(2, 1);
  c.allF32();
  c.shape(c.in(1), c.in(0).shape);
  c.shape(c.out(0), c.in(0).shape);
}

void softmaxLike(Checker &c, size_t operands) {
  c.counts(operands, 1);
  c.allF32();
  for (size_t i = 1; i < operands; ++i)
    c.shape(c.in(i), c.in(0).shape);
  c.shape(c.out(0), c.in(0).shape);
  c.dim(c.in(0), c.instr.getInt("dim"));
}

void lossForward(Checker &c) {
  c.counts(2, 1);
  c.f32(c.in(0));
  c.index(c.in(1));
  c.f32(c.out(0));
  if (c.in(0).shape.size() != 2)
    c.fail("the input must be [N, C]");
  c.shape(c.in(1), {c.in(0).shape[0]});
  c.shape(c.out(0), {});
}

void lossBackward(Checker &c) {
  c.counts(3, 1);
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

void reduce(Checker &c) {
  c.counts(1, 1);
  c.allF32();
  const std::vector<int64_t> &dims = c.instr.getInts("dims");
  std::set<int64_t> reduced;
  for (int64_t d : dims)
    if (!reduced.insert(c.dim(c.in(0), d)).second)
      c.fail("dimension " + std::to_string(d) + " is reduced twice");
  bool keep = c.instr.getFlag("keep_dims");
  std::vector<int64_t> expected;
  for (size_t d = 0; d < c.in(0).shape.size(); ++d) {
    if (!reduced.count(d))
      expected.push_back(c.in(0).shape[d]);
    else if (keep)
      expected.push_back(1);
  }
  c.shape(c.out(0), expected);
}

/// The group size, and that a collective's split dimension is outermost.
int64_t splitCheck(Checker &c, const Buffer &b, int64_t d) {
  c.dim(b, d);
  for (int64_t k = 0; k < d; ++k)
    if (b.shape[k] != 1)
      c.fail("the runtime splits along the outermost non-unit dimension "
             "only, but dimension " +
             std::to_string(d) + " of " + shapeOf(b) + " is not");
  return c.group().size();
}

void collectiveDType(Checker &c, const Buffer &b) {
  if (!isFloat(b.dtype) && b.dtype != DType::I32 && b.dtype != DType::I64)
    c.fail("collectives move floating-point, i32 or i64 tensors, but '" +
           b.name + "' is " + shapeOf(b));
}

const std::unordered_map<std::string, Rule> &rules() {
  static const std::unordered_map<std::string, Rule> table = {
      {"matmul",
       [](Checker &c) {
         c.counts(2, 1);
         c.allF32();
         c.noOverlap();
         const Buffer &a = c.in(0), &b = c.in(1);
         if (a.shape.size() < 2 || b.shape.size() < 2)
           c.fail("operands must have rank 2 or more");
         bool ta = c.instr.getFlag("transpose_a");
         bool tb = c.instr.getFlag("transpose_b");
         size_t ra = a.shape.size(), rb = b.shape.size();
         int64_t m = a.shape[ra - (ta ? 1 : 2)], k = a.shape[ra - (ta ? 2 : 1)];
         int64_t kb = b.shape[rb - (tb ? 1 : 2)],
                 n = b.shape[rb - (tb ? 2 : 1)];
         if (k != kb)
           c.fail("contraction sizes differ: " + std::to_string(k) + " and " +
                  std::to_string(kb));
         std::vector<int64_t> lead(a.shape.begin(), a.shape.end() - 2);
         if (rb != 2 &&
             std::vector<int64_t>(b.shape.begin(), b.shape.end() - 2) != lead)
           c.fail("batch dimensions differ");
         lead.push_back(m);
         lead.push_back(n);
         c.shape(c.out(0), lead);
       }},
      {"add", sameShapeBinary},
      {"sub", sameShapeBinary},
      {"mul", sameShapeBinary},
      {"div", sameShapeBinary},
      {"scale",
       [](Checker &c) {
         sameShapeUnary(c);
         c.instr.getFloat("factor");
       }},
      {"cast", sameShapeUnary},
      {"relu", sameShapeUnary},
      {"relu_backward", sameShapeBinary},
      {"gelu", sameShapeUnary},
      {"gelu_backward", sameShapeBinary},
      {"bias_add",
       [](Checker &c) {
         c.counts(2, 1);
         c.allF32();
         if (c.in(0).shape.empty())
           c.fail("the input must have rank 1 or more");
         c.shape(c.in(1), {c.in(0).shape.back()});
         c.shape(c.out(0), c.in(0).shape);
       }},
      {"reduce_sum", reduce},
      {"reduce_mean", reduce},
      {"softmax", [](Checker &c) { softmaxLike(c, 1); }},
      {"log_softmax", [](Checker &c) { softmaxLike(c, 1); }},
      {"softmax_backward", [](Checker &c) { softmaxLike(c, 2); }},
      {"log_softmax_backward", [](Checker &c) { softmaxLike(c, 2); }},
      {"causal_mask",
       [](Checker &c) {
         sameShapeUnary(c);
         const auto &s = c.in(0).shape;
         if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
           c.fail("the last two dimensions must be equal");
         c.instr.getFloat("fill");
       }},
      {"layer_norm",
       [](Checker &c) {
         c.counts(3, 3);
         c.allF32();
         const Buffer &x = c.in(0), &g = c.in(1);
         if (g.shape.empty() || g.shape.size() > x.shape.size() ||
             !std::equal(g.shape.rbegin(), g.shape.rend(), x.shape.rbegin()))
           c.fail("gamma " + shapeOf(g) + " must span trailing dimensions of " +
                  shapeOf(x));
         c.shape(c.in(2), g.shape);
         c.shape(c.out(0), x.shape);
         std::vector<int64_t> lead(x.shape.begin(),
                                   x.shape.end() - g.shape.size());
         c.shape(c.out(1), lead);
         c.shape(c.out(2), lead);
         c.instr.getFloat("epsilon");
       }},
      {"layer_norm_backward",
       [](Checker &c) {
         c.counts(5, 3);
         c.allF32();
         const Buffer &x = c.in(1), &g = c.in(4);
         c.shape(c.in(0), x.shape);
         if (g.shape.empty() || g.shape.size() > x.shape.size() ||
             !std::equal(g.shape.rbegin(), g.shape.rend(), x.shape.rbegin()))
           c.fail("gamma " + shapeOf(g) + " must span trailing dimensions of " +
                  shapeOf(x));
         std::vector<int64_t> lead(x.shape.begin(),
                                   x.shape.end() - g.shape.size());
         c.shape(c.in(2), lead);
         c.shape(c.in(3), lead);
         c.shape(c.out(0), x.shape);
         c.shape(c.out(1), g.shape);
         c.shape(c.out(2), g.shape);
       }},
      {"nll_loss", lossForward},
      {"cross_entropy", lossForward},
      {"nll_loss_backward", lossBackward},
      {"cross_entropy_backward", lossBackward},
      {"embedding",
       [](Checker &c) {
         c.counts(2, 1);
         c.f32(c.in(0));
         c.index(c.in(1));
         c.f32(c.out(0));
         if (c.in(0).shape.size() != 2)
           c.fail("the table must be [V, D]");
         std::vector<int64_t> expected = c.in(1).shape;
         expected.push_back(c.in(0).shape[1]);
         c.shape(c.out(0), expected);
       }},
      {"embedding_backward",
       [](Checker &c) {
         c.counts(2, 1);
         c.f32(c.in(0));
         c.index(c.in(1));
         c.f32(c.out(0));
         if (c.out(0).shape.size() != 2)
           c.fail("the table gradient must be [V, D]");
         std::vector<int64_t> expected = c.in(1).shape;
         expected.push_back(c.out(0).shape[1]);
         c.shape(c.in(0), expected);
       }},
      {"reshape",
       [](Checker &c) {
         c.counts(1, 1);
         if (c.in(0).dtype != c.out(0).dtype ||
             c.in(0).numElements() != c.out(0).numElements())
           c.fail("cannot reshape " + shapeOf(c.in(0)) + " to " +
                  shapeOf(c.out(0)));
       }},
      {"transpose",
       [](Checker &c) {
         c.counts(1, 1);
         const auto &perm = c.instr.getInts("permutation");
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
       }},
      {"broadcast",
       [](Checker &c) {
         c.counts(1, 1);
         const auto &dims = c.instr.getInts("dims");
         const Buffer &x = c.in(0), &y = c.out(0);
         if (y.dtype != x.dtype ||
             y.shape.size() != x.shape.size() + dims.size())
           c.fail("cannot broadcast " + shapeOf(x) + " to " + shapeOf(y));
         std::set<int64_t> added;
         for (int64_t d : dims)
           if (!added.insert(c.dim(y, d)).second)
             c.fail("dimension " + std::to_string(d) + " is added twice");
         size_t k = 0;
         for (size_t d = 0; d < y.shape.size(); ++d)
           if (!added.count(d) && y.shape[d] != x.shape[k++])
             c.fail("cannot broadcast " + shapeOf(x) + " to " + shapeOf(y));
       }},
      {"slice",
       [](Checker &c) {
         c.counts(1, 1);
         const Buffer &x = c.in(0), &y = c.out(0);
         const auto &offsets = c.instr.getInts("offsets");
         std::vector<int64_t> strides(x.shape.size(), 1);
         if (c.instr.attrs.count("strides"))
           strides = c.instr.getInts("strides");
         if (y.dtype != x.dtype || offsets.size() != x.shape.size() ||
             strides.size() != x.shape.size() ||
             y.shape.size() != x.shape.size())
           c.fail("bad slice of " + shapeOf(x) + " to " + shapeOf(y));
         for (size_t d = 0; d < x.shape.size(); ++d)
           if (offsets[d] < 0 || strides[d] <= 0 ||
               (y.shape[d] > 0 &&
                offsets[d] + (y.shape[d] - 1) * strides[d] >= x.shape[d]))
             c.fail("the slice leaves " + shapeOf(x) + " along dimension " +
                    std::to_string(d));
       }},
      {"concat",
       [](Checker &c) {
         if (c.instr.operands.empty() || c.instr.results.size() != 1)
           c.fail("expected operands and one result");
         const Buffer &y = c.out(0);
         int64_t d = c.dim(y, c.instr.getInt("dim"));
         int64_t total = 0;
         for (size_t i = 0; i < c.instr.operands.size(); ++i) {
           const Buffer &x = c.in(i);
           if (x.dtype != y.dtype || x.shape.size() != y.shape.size())
             c.fail("cannot concatenate " + shapeOf(x) + " into " + shapeOf(y));
           for (size_t k = 0; k < y.shape.size(); ++k)
             if (int64_t(k) != d && x.shape[k] != y.shape[k])
               c.fail("cannot concatenate " + shapeOf(x) + " into " +
                      shapeOf(y));
           total += x.shape[d];
         }
         if (total != y.shape[d])
           c.fail("the inputs add up to " + std::to_string(total) +
                  " along dimension " + std::to_string(d));
       }},
      {"constant",
       [](Checker &c) {
         c.counts(0, 1);
         auto it = c.instr.attrs.find("value");
         if (it == c.instr.attrs.end() ||
             it->second.data.size() != c.out(0).bytes)
           c.fail("the constant's data does not fill " + shapeOf(c.out(0)));
       }},
      {"fill",
       [](Checker &c) {
         c.counts(0, 1);
         c.f32(c.out(0));
         c.instr.getFloat("value");
       }},
      {"sgd",
       [](Checker &c) {
         c.counts(3, 2);
         c.allF32();
         for (size_t i = 1; i < 3; ++i)
           c.shape(c.in(i), c.in(0).shape);
         c.shape(c.out(0), c.in(0).shape);
         c.shape(c.out(1), c.in(0).shape);
         c.instr.getFloat("lr");
         c.instr.getFloat("momentum");
         c.instr.getFloat("weight_decay");
       }},
      {"adamw",
       [](Checker &c) {
         c.counts(5, 3);
         c.allF32();
         for (size_t i = 1; i < 4; ++i)
           c.shape(c.in(i), c.in(0).shape);
         c.shape(c.in(4), {});
         for (size_t i = 0; i < 3; ++i)
           c.shape(c.out(i), c.in(0).shape);
         for (const char *name :
              {"lr", "beta1", "beta2", "eps", "weight_decay"})
           c.instr.getFloat(name);
       }},
  };
  return table;
}

void checkCollective(Checker &c) {
  std::string op = c.instr.collectiveName();
  const auto &instr = c.instr;
  for (size_t i = 0; i < instr.operands.size(); ++i)
    collectiveDType(c, c.in(i));
  for (size_t i = 0; i < instr.results.size(); ++i)
    collectiveDType(c, c.out(i));
  if (op == "all_reduce") {
    if (instr.operands.empty() || instr.operands.size() != instr.results.size())
      c.fail("expected as many results as operands");
    for (size_t i = 0; i < instr.operands.size(); ++i) {
      c.shape(c.out(i), c.in(i).shape);
      if (c.out(i).dtype != c.in(i).dtype)
        c.fail("element types differ");
    }
    std::string r = instr.getString("reduction", "sum");
    if (r != "sum" && r != "avg" && r != "max" && r != "min")
      c.fail("unknown reduction '" + r + "'");
    // The results are reduced in place: in runs of adjacent buffers.
    for (size_t i = 0; i < instr.results.size(); ++i)
      for (size_t j = i + 1; j < instr.results.size(); ++j) {
        const Buffer &a = c.out(i), &b = c.out(j);
        if (a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes)
          c.fail("results '" + a.name + "' and '" + b.name + "' overlap");
      }
    return;
  }
  if (op == "reduce_scatter" || op == "all_gather" || op == "all_to_all" ||
      op == "collective_broadcast") {
    c.counts(1, 1);
    c.noOverlap();
    const Buffer &x = c.in(0), &y = c.out(0);
    if (x.dtype != y.dtype)
      c.fail("element types differ");
    std::vector<int64_t> expected = x.shape;
    if (op == "reduce_scatter") {
      int64_t d = instr.getInt("scatter_dim");
      int64_t n = splitCheck(c, x, d);
      if (x.shape[d] % n)
        c.fail("dimension " + std::to_string(d) + " of " + shapeOf(x) +
               " does not split into " + std::to_string(n));
      expected[d] /= n;
      std::string r = instr.getString("reduction", "sum");
      if (r != "sum" && r != "avg" && r != "max" && r != "min")
        c.fail("unknown reduction '" + r + "'");
    } else if (op == "all_gather") {
      int64_t d = instr.getInt("gather_dim");
      expected[d] *= splitCheck(c, x, d);
    } else if (op == "all_to_all") {
      int64_t s = instr.getInt("split_dim"), k = instr.getInt("concat_dim");
      if (s != k)
        c.fail("the runtime supports all_to_all with split_dim == concat_dim");
      int64_t n = splitCheck(c, x, s);
      if (x.shape[s] % n)
        c.fail("dimension " + std::to_string(s) + " does not split into " +
               std::to_string(n));
    } else {
      int64_t root = instr.getInt("root");
      if (root < 0 || root >= c.group().size())
        c.fail("root " + std::to_string(root) + " is not in the group");
    }
    c.shape(y, expected);
    return;
  }
  if (op == "send" || op == "recv") {
    if (op == "send")
      c.counts(1, 0);
    else
      c.counts(0, 1);
    int64_t peer = instr.getInt("peer");
    if (peer < 0 || peer >= c.group().size())
      c.fail("peer " + std::to_string(peer) + " is not in the group");
    return;
  }
  c.fail("unknown collective");
}

} // namespace

void braid::rt::checkComputeTypes(const Plan &plan, const char *backend) {
  for (const Stream &s : plan.streams)
    for (const Instr &i : s.instrs)
      for (const auto *ids : {&i.operands, &i.results})
        for (uint32_t id : *ids) {
          const Buffer &b = plan.buffers[id];
          if (b.dtype != DType::F32 && b.dtype != DType::I32 &&
              b.dtype != DType::I64 && b.dtype != DType::I1)
            throw PlanError(i.describe() + ": the " + std::string(backend) +
                            " backend computes in f32 (with i32 or i64 "
                            "indices), but '" +
                            b.name + "' is " + shapeOf(b) +
                            "; --backend=sim simulates other types");
        }
}

void braid::rt::checkOp(const Plan &plan, const Instr &instr) {
  Checker c{plan, instr};
  if (instr.kind == InstrKind::Collective ||
      instr.kind == InstrKind::CollectiveStart)
    return checkCollective(c);
  auto it = rules().find(instr.op);
  if (it == rules().end())
    c.fail("unknown op; this braid-run has no kernel for it");
  it->second(c);
  if (instr.op != "sgd" && instr.op != "adamw")
    return c.noOverlap();
  // An update may overwrite its own input, element for element, and nothing
  // else.
  for (uint32_t r : instr.results)
    for (uint32_t o : instr.operands) {
      const Buffer &a = plan.buffers[r], &b = plan.buffers[o];
      if (a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes &&
          (a.offset != b.offset || a.bytes != b.bytes))
        c.fail("result '" + a.name + "' partly overlaps operand '" + b.name +
               "'");
    }
}
