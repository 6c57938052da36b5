# Plots the output of bench/multimodal_figures: gnuplot -e "dir='OUT'; name='multimodal'" bench/multimodal_figures.gp
set terminal pngcairo size 900,300 font ",9"
set output dir."/".name.".png"
set multiplot layout 1,3
set xrange [-8:14]; set yrange [-8:6]
set xlabel "w[1] (hidden)"; set ylabel "w[2] (observed)"
set view map; set contour base; set cntrparam levels discrete 0.01, 0.05, 0.2, 0.5, 0.8
unset surface; set table dir."/".name."_contours.dat"
splot dir."/".name."_grid.dat" using 1:2:3 with lines
unset table
set key top right box opaque
do for [m in "rwm varmh varmix"] {
  title_of = (m eq "rwm") ? "random walk, poor start (Fig. 14)" : (m eq "varmh") ? "naive VarMCMC (Fig. 15)" : "VarMixMCMC (Fig. 16)"
  set title title_of
  plot dir."/".name."_".m.".dat" every 5 using 1:2 with points pt 7 ps 0.15 lc rgb "#4477aa" title "draws", \
       dir."/".name."_contours.dat" using 1:2 with lines lc rgb "black" title "exact", \
       dir."/".name."_vb.dat" using 1:2 with lines lw 2 lc rgb "#cc3311" title "VB 2 sd"
}
unset multiplot
