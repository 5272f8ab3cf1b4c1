set terminal svg size 900,800
set output '/work/wt-accept/results/20261206-accept-lab-10x/mpi/baseline-1-071850-base/heatmap-mpi-lat.svg'
set title "mpi pair latency floor us" noenhanced
set xlabel 'unit'
set ylabel 'unit'
set cblabel 'us'
set size ratio -1
set xtics 1
set ytics 1
set xrange [-0.5:5.5]
set yrange [5.5:-0.5]
set palette defined (0 'red', 0.5 'yellow', 1 'green')
set palette negative
set datafile missing 'NaN'
plot '/work/wt-accept/results/20261206-accept-lab-10x/mpi/baseline-1-071850-base/heatmap-mpi-lat.dat' matrix with image notitle
