//===- StageSimulation.h - do several programs run to their end? -*- C++
//-*-===//
//
// The programs of a pipeline's stages run on different ranks and meet only
// in their transfers (a send and its receive) and in collectives that span
// stages. StageSimulation runs such programs under a model that is at
// least as strict as every backend's, and either finishes them or returns
// a cycle of ops that wait on each other, which is a deadlock:
//
//  - each program's streams run their ops in order; an op starts when it is
//    at the front of its stream and the ops it depends on (its operands'
//    producers, the event or future it waits for) have completed;
//  - ops that exchange data with other programs (an exchange) complete
//    only when all of the exchange's members have started, and hold their
//    streams until then, as a NCCL kernel holds its CUDA stream (a send is
//    a rendezvous: no backend may rely on buffering); an op in several
//    exchanges (a send-receive: its send and its receive) completes when
//    all of them have;
//  - a program's ops marked `ordered` (its collectives) start in program
//    order, as the runtime issues them; every other op completes when it
//    starts.
//
// Loosening any rule (buffered sends, non-blocking issue, another
// interleaving of streams) only lets ops start earlier, so programs that
// finish here finish on every backend. Ops are indices, so that the model
// is tested without IR (unittests/StageSimulationTest.cpp); braid's
// schedule verifier builds it from the stage programs of a module.
//
//===----------------------------------------------------------------------===//

#ifndef BRAID_DIALECT_BRAID_ANALYSIS_STAGESIMULATION_H
#define BRAID_DIALECT_BRAID_ANALYSIS_STAGESIMULATION_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <vector>

namespace braid {

class StageSimulation {
public:
  /// An op: the program it is in and its index in that program's order.
  struct OpRef {
    unsigned program = 0, op = 0;
    bool operator==(const OpRef &other) const {
      return program == other.program && op == other.op;
    }
  };

  /// Why an op of a deadlock cycle cannot go on: it waits for the next op
  /// of the cycle to start (`Exchange`: a member of its exchange; `Order`:
  /// an earlier collective of its program; `Stream`: the op ahead of it on
  /// its stream, to complete; `Operand`: an op it depends on, to complete).
  enum class Wait { Exchange, Order, Stream, Operand };

  struct Link {
    OpRef op;
    Wait waits;
  };

  /// A new, empty program; returns its index.
  unsigned addProgram();

  /// Appends an op to `program` on `stream`, depending on earlier ops of
  /// the same program (`deps`, indices); `ordered` ops start in program
  /// order. Returns its index in the program.
  unsigned addOp(unsigned program, unsigned stream,
                 llvm::ArrayRef<unsigned> deps, bool ordered);

  /// Ops that complete together once all of them have started; an op in
  /// several exchanges completes once each of them is complete.
  void addExchange(llvm::ArrayRef<OpRef> members);

  /// Runs the programs: an empty result when every op completes, otherwise
  /// a cycle in which each op waits, as its link says, for the next (the
  /// last for the first).
  llvm::SmallVector<Link> run() const;

private:
  struct Op {
    unsigned stream;
    llvm::SmallVector<unsigned, 2> deps;
    bool ordered;
    /// Indices into `exchanges`.
    llvm::SmallVector<unsigned, 1> exchanges;
  };
  std::vector<std::vector<Op>> programs;
  std::vector<llvm::SmallVector<OpRef, 2>> exchanges;
};

} // namespace braid

#endif // BRAID_DIALECT_BRAID_ANALYSIS_STAGESIMULATION_H
