/* tp_job: one recording is one job. Gathers the processes of a recording into ranks.
 *
 * A native trace holds one process (tp_rank.procs[0]). A training job under `trainprof
 * record` is often several: the main process and its DataLoader or multiprocessing workers,
 * a launcher and the ranks it starts, each writing its own trace (docs/collector.md, "One
 * recording"). Counting each as a rank would be wrong twice: workers are no ranks, and the
 * rank numbers they would take are free numbers, not theirs. So, after loading:
 *   - processes belong to one recording when their PROCESS records carry the same job_id;
 *     traces older than format 1.3 have none, and are linked through the process tree
 *     instead (a process joins the one whose pid is its ppid and which started before it);
 *   - a process has a rank only when its environment named one (RANK, OMPI_COMM_WORLD_RANK,
 *     SLURM_PROCID, read by the collector); workers inherit their parent's;
 *   - the processes of one recording with the same rank are one rank (tp_model_merge_rank),
 *     and a recording's processes without a rank join its lowest rank, or are one rank of
 *     their own when no process of the recording has one (numbered like any rankless file);
 *   - within a rank the processes are in tree order: the main one (the process `record`
 *     started, or the tree's root) first, then each process after the one it came from
 *     (tp_process.parent), children in the order they started; exec'd images follow the
 *     image before them.
 * Kineto ranks (no process) are left as they are. */
#ifndef TP_JOB_H
#define TP_JOB_H

#include "tp_model.h"

/* Gathers the ranks of `m` (loaded, not finished) as above. Ranks that are one process
 * alone keep their place and content; a gathered rank takes the place of its first file in
 * load order. */
void tp_job_gather(tp_model *m);

#endif
