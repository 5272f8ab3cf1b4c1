set terminal pngcairo size 1000,700 noenhanced
set output 'results/model-fit-h200x2-nvlink-cuda/plots/fit_10_reducescatter_cuda.png'
set title 'others-cuda-vs-nccl: reducescatter cuda/CUDA IPC P2P (NVLink: native atomics) [out] 2 ranks x 1 nodes'
set logscale x 2
set logscale y 10
set format x '%.0b%B'
set xlabel 'size (bytes)'
set ylabel 'time (us)'
set key top left
set grid
$m << EOD
1024 6.012799963355064 6.245604113328262
4096 6.350400298833846 6.250212627438813
16384 6.361600011587143 6.268646683881019
65536 6.247999891638757 6.342382909649841
262144 6.58079981803894 6.637327812725131
1048576 8.036799728870392 7.817107425026288
4194304 12.720000743865965 12.536225874230919
16777216 30.783998966217045 31.412699671049445
67108864 107.94080495834349 106.91859485832354
268435456 407.31678009033203 408.9421756074199
EOD
plot $m using 1:3 with lines lw 2 title 'fitted', $m using 1:2 with points pt 7 title 'measured'
