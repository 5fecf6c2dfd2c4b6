#pragma once

// Internal to kernels/: one factory per bundled workload, each defined in its own .cu file and
// listed by allWorkloads() (workload.cpp) in this order.

#include "workload.h"

namespace warpline::kernels {

Workload runaheadWorkload();  // runahead.cu
Workload syncStallWorkload(); // syncstall.cu
Workload geluWorkload();      // gelu.cu
Workload softmaxWorkload();   // softmax.cu
Workload matmulWorkload();    // matmul.cu
Workload streamsWorkload();   // streams.cu
Workload graphsWorkload();    // graphs.cu
Workload mlpWorkload();       // mlp.cu
Workload allReduceWorkload(); // allreduce.cu

} // namespace warpline::kernels
