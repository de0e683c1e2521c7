package server

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
)

// fieldIcon draws the field app's icon, size × size pixels: a white target on the
// console's blue, everything inside the middle 80 % so that a maskable crop keeps it.
// It is drawn here rather than committed as a binary file; the same code gives the same
// bytes, so the ETag and the service worker's version are stable.
func fieldIcon(size int) []byte {
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	bg := color.NRGBA{R: 0x0b, G: 0x3d, B: 0x91, A: 0xff}
	fg := color.NRGBA{R: 0xff, G: 0xff, B: 0xff, A: 0xff}
	c := float64(size) / 2
	ringOut, ringIn, dot := 0.30*float64(size), 0.22*float64(size), 0.09*float64(size)
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			dx, dy := float64(x)+0.5-c, float64(y)+0.5-c
			d2 := dx*dx + dy*dy
			px := bg
			if (d2 <= ringOut*ringOut && d2 >= ringIn*ringIn) || d2 <= dot*dot {
				px = fg
			}
			img.SetNRGBA(x, y, px)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		panic(err) // encoding to memory does not fail
	}
	return buf.Bytes()
}
