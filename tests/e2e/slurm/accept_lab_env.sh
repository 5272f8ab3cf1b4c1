# Sourced by accept_lab.sh and launch_loop.sh: the acceptance lab's own nodes, prefix, net and folder
# (6 nodes fba1..fba6 on 10.232.0.x, apart from the other lab tests'), then the lab's shared functions.
HERE=$(cd "$(dirname "${BASH_SOURCE[1]}")" && pwd)
SRC=$(cd "$HERE/../../.." && pwd)
export FBLAB_NODES=${FBLAB_NODES:-6} FBLAB_PREFIX=${FBLAB_PREFIX:-fba} FBLAB_NET=${FBLAB_NET:-10.232.0} \
       FBLAB_DIR=${FBLAB_DIR:-/tmp/fabricbench-lab-accept}
source "$HERE/lab_common.sh"
