set terminal svg size 900,800
set output '/work/wt-accept/results/20261206-accept-lab-10x/mpi/pair-1-070342/heatmap-mpi-bw.svg'
set title "mpi pair bandwidth GB/s" noenhanced
set xlabel 'unit'
set ylabel 'unit'
set cblabel 'GB/s'
set size ratio -1
set xtics 1
set ytics 1
set xrange [-0.5:5.5]
set yrange [5.5:-0.5]
set palette defined (0 'red', 0.5 'yellow', 1 'green')
set datafile missing 'NaN'
plot '/work/wt-accept/results/20261206-accept-lab-10x/mpi/pair-1-070342/heatmap-mpi-bw.dat' matrix with image notitle
