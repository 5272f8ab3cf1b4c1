/* mpi_init_dup.c - the first thing fabricbench does after MPI_Init (MPI_Comm_dup, then an allgather),
 * without fabricbench: launch_loop.sh runs it to tell an Open MPI/PMIx start-up crash from ours.
 *   mpicc -O2 -o /tmp/mpi_init_dup tests/e2e/slurm/mpi_init_dup.c
 *   bash tests/e2e/slurm/launch_loop.sh 150 /tmp/mpi_init_dup                                    */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  long mine = rank, *all = malloc(sizeof(long) * (size_t)size);
  MPI_Allgather(&mine, 1, MPI_LONG, all, 1, MPI_LONG, dup);
  int wrong = 0;
  for (int r = 0; r < size; ++r) wrong += all[r] != r;
  if (rank == 0) printf("mpi_init_dup: %d ranks, %d wrong\n", size, wrong);
  free(all);
  MPI_Comm_free(&dup);
  MPI_Finalize();
  return wrong ? 1 : 0;
}
