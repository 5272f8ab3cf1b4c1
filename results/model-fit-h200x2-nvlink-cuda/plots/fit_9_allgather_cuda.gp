set terminal pngcairo size 1000,700 noenhanced
set output 'results/model-fit-h200x2-nvlink-cuda/plots/fit_9_allgather_cuda.png'
set title 'others-cuda-vs-nccl: allgather cuda/CUDA IPC P2P (NVLink: native atomics) [out] 2 ranks x 1 nodes'
set logscale x 2
set logscale y 10
set format x '%.0b%B'
set xlabel 'size (bytes)'
set ylabel 'time (us)'
set key top left
set grid
$m << EOD
1024 6.5935999155044565 6.358805957497107
4096 6.310400366783142 6.57922284166737
16384 7.5375996530056 7.460890378348421
65536 6.969600170850754 6.976193824940569
262144 7.21919983625412 7.253922845121639
1048576 8.436799794435503 8.364838925845916
4194304 12.774400413036348 12.80850324874303
16777216 31.699201464653022 31.752431967215667
67108864 117.39360094070435 116.4810380920473
268435456 452.68158912658697 455.3954625913738
EOD
plot $m using 1:3 with lines lw 2 title 'fitted', $m using 1:2 with points pt 7 title 'measured'
